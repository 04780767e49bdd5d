import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { RouterConfig } from "../../../shared/config/types";
import { errorMessage } from "../../../shared/errors";
import { cleanUpModeKey, openTransfersKey } from "../../../shared/coordination/keys";
import { txQueueBacklogKeys } from "../../../shared/queues";
import { withTimeout } from "../../../shared/timing";
import type { AuctionContext } from "../context";

/** The status response (docs/protocol.md#status), plus this router's two modes. */
export interface StatusReport {
  readonly isRouterContract: boolean;
  readonly routerVersion: string;
  readonly routerAddress: string;
  readonly signerAddress: string;
  /** Transaction jobs waiting, active, delayed or prioritized across the configured chains' queues. */
  readonly trackerLength: number;
  /** Prepared transfer sides in the transfer store across the configured chains (a transfer counts once per chain it is open on). */
  readonly activeTransactionsLength: number;
  readonly swapPools: Readonly<Record<string, string[]>>;
  readonly supportedChains: number[];
  readonly cleanUpMode: boolean;
  readonly diagnosticMode: boolean;
}

/** A status answer must come within the SDK's 2 s wait: each count gets this long, then counts as 0. */
export const STATUS_COUNT_TIMEOUT_MS = 1_000;

/**
 * The status answer. Static parts come from the config; the two counts are O(1) Redis reads per chain
 * (the lengths of the queue's unfinished-job lists and sets, and ZCARD of the open-transfers index), bounded in
 * time; a count that fails or is late is reported as 0 and logged, so a status request is always answered.
 */
export async function buildStatusReport(ctx: AuctionContext, routerVersion: string): Promise<StatusReport> {
  const chainIds = Object.keys(ctx.config.chainConfig).map(Number);
  const [trackerLength, activeTransactionsLength, cleanUpSwitch] = await Promise.all([
    boundedCount(ctx, "trackerLength", () => countQueuedJobs(ctx, chainIds)),
    boundedCount(ctx, "activeTransactionsLength", () => countOpenTransfers(ctx, chainIds)),
    // The run-time switch of `npm run drain`; unreadable counts as off (the reservation step still enforces it).
    boundedCount(ctx, "cleanUpMode", () => ctx.redis.exists(cleanUpModeKey(ctx.config.redisPrefix))),
  ]);
  const { swapPools, supportedChains } = poolsOf(ctx.config);
  return {
    isRouterContract: ctx.config.routerContractAddress !== undefined,
    routerVersion,
    routerAddress: ctx.routerAddress,
    signerAddress: ctx.signerAddress,
    trackerLength,
    activeTransactionsLength,
    swapPools,
    supportedChains,
    cleanUpMode: ctx.config.cleanUpMode || cleanUpSwitch > 0,
    diagnosticMode: ctx.config.diagnosticMode,
  };
}

/** `{ "<chainId>": [assetId, …] }` over every pool, each asset once, and the chain ids that appear, sorted. */
export function poolsOf(config: Pick<RouterConfig, "swapPools">): {
  swapPools: Record<string, string[]>;
  supportedChains: number[];
} {
  const byChain = new Map<number, string[]>();
  for (const pool of config.swapPools) {
    for (const asset of pool.assets) {
      const assets = byChain.get(asset.chainId) ?? [];
      if (!assets.some((a) => a.toLowerCase() === asset.assetId.toLowerCase())) {
        assets.push(asset.assetId);
      }
      byChain.set(asset.chainId, assets);
    }
  }
  const supportedChains = [...byChain.keys()].sort((a, b) => a - b);
  return {
    swapPools: Object.fromEntries(supportedChains.map((id) => [String(id), byChain.get(id) ?? []])),
    supportedChains,
  };
}

/** BullMQ's waiting, active, delayed and prioritized jobs over the chains, read without BullMQ (names.ts). */
async function countQueuedJobs(ctx: AuctionContext, chainIds: readonly number[]): Promise<number> {
  const reads = ctx.redis.pipeline();
  for (const chainId of chainIds) {
    const { lists, sortedSets } = txQueueBacklogKeys(ctx.config.redisPrefix, chainId);
    lists.forEach((key) => reads.llen(key));
    sortedSets.forEach((key) => reads.zcard(key));
  }
  let total = 0;
  for (const [err, count] of (await reads.exec()) ?? []) {
    if (err) throw err;
    total += Number(count);
  }
  return total;
}

async function countOpenTransfers(ctx: AuctionContext, chainIds: readonly number[]): Promise<number> {
  const counts = await Promise.all(
    chainIds.map((chainId) => ctx.redis.zcard(openTransfersKey(ctx.config.redisPrefix, chainId))),
  );
  return counts.reduce((sum, n) => sum + n, 0);
}

async function boundedCount(ctx: AuctionContext, field: string, count: () => Promise<number>): Promise<number> {
  try {
    return await withTimeout(count(), STATUS_COUNT_TIMEOUT_MS);
  } catch (err) {
    ctx.logger.warn("status count unavailable; reported as 0", {
      at: "auction.status",
      field,
      error: errorMessage(err),
    });
    return 0;
  }
}

/**
 * The router's package version, read once at startup: the nearest package.json above this file (the repo
 * root from the sources and from dist/ alike). "unknown" if none is found.
 */
export function readRouterVersion(startDir: string = __dirname): string {
  let dir = startDir;
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const version = (JSON.parse(readFileSync(file, "utf8")) as { version?: unknown }).version;
      return typeof version === "string" ? version : "unknown";
    }
    const parent = dirname(dir);
    if (parent === dir) {
      return "unknown";
    }
    dir = parent;
  }
}
