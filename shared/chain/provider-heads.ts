import type { RouterError } from "../errors";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { sleep } from "../timing";
import { toChainError } from "./errors";
import type { Entry } from "./provider-entries";

/** A read waits at most this long for a head refresh; a black-holed provider must not stall every read. */
const HEAD_WAIT_MS = 2_000;

/**
 * Makes sure the heads are at most `refreshMs` old before a call: one refresh at a time, in the background,
 * except the very first, which a call waits for (at most HEAD_WAIT_MS).
 */
export function createHeadRefresh(
  heads: HeadTracker,
  refreshMs: number,
  destroyed: () => boolean,
): () => Promise<void> {
  let headsAtMs = 0;
  let refreshing: Promise<void> | undefined;
  const refresh = (): Promise<void> => {
    refreshing ??= heads.refresh().finally(() => {
      headsAtMs = Date.now();
      refreshing = undefined;
    });
    return refreshing;
  };
  return async () => {
    if (destroyed() || Date.now() - headsAtMs < refreshMs) {
      return;
    }
    const running = refresh();
    if (headsAtMs === 0) {
      await Promise.race([running, sleep(HEAD_WAIT_MS)]);
    }
  };
}

export interface HeadTracker {
  refresh(): Promise<void>;
  /** Healthy in-sync providers in priority order, then the unhealthy ones as a last resort. */
  readOrder(): Entry[];
  broadcastTargets(): Entry[];
  markUnavailable(entry: Entry, err: RouterError, what: string): void;
  laggingLabels(): string[];
}

export function createHeadTracker(params: {
  entries: Entry[];
  chainId: number;
  maxLag: number;
  logger: Logger;
}): HeadTracker {
  const { entries, chainId, maxLag, logger } = params;
  const usable = (): Entry[] => entries.filter((e) => !e.wrongChain);

  const setHealthy = (entry: Entry, healthy: boolean, err?: RouterError, what = "getBlockNumber"): void => {
    if (entry.healthy && !healthy) {
      logger.warn("provider unavailable, skipping it", {
        at: "chain.provider",
        provider: entry.label,
        call: what,
        code: err?.code,
        error: err ? errorMessage(err) : undefined,
      });
    } else if (!entry.healthy && healthy) {
      logger.info("provider available again", { at: "chain.provider", provider: entry.label });
    }
    entry.healthy = healthy;
  };

  const refreshOne = async (entry: Entry): Promise<void> => {
    try {
      await checkChain(entry, chainId, logger);
      entry.head = await entry.provider.getBlockNumber();
      setHealthy(entry, true);
    } catch (err) {
      setHealthy(entry, false, toChainError(err));
    }
  };

  return {
    refresh: async () => {
      await Promise.all(usable().map(refreshOne));
      updateLag(usable(), maxLag, logger);
    },
    readOrder: () => {
      const inSync = usable().filter((e) => e.healthy && !e.lagging);
      return [...inSync, ...usable().filter((e) => !e.healthy)];
    },
    broadcastTargets: () => {
      const healthy = usable().filter((e) => e.healthy);
      return healthy.length > 0 ? healthy : usable();
    },
    markUnavailable: (entry, err, what) => setHealthy(entry, false, err, what),
    laggingLabels: () =>
      usable()
        .filter((e) => e.lagging)
        .map((e) => e.label),
  };
}

/** Once per provider: one that answers another chain id is marked and never used (its reads would be wrong). */
async function checkChain(entry: Entry, chainId: number, logger: Logger): Promise<void> {
  if (entry.chainChecked) {
    return;
  }
  const answered = Number(BigInt(await entry.provider.send("eth_chainId", [])));
  entry.chainChecked = true;
  if (answered !== chainId) {
    entry.wrongChain = true;
    logger.error("provider serves another chain: never used", {
      at: "chain.provider",
      provider: entry.label,
      expectedChainId: chainId,
      answeredChainId: answered,
    });
  }
}

/** Marks as lagging every healthy provider more than `maxLag` blocks behind the best healthy head; logs changes. */
function updateLag(entries: readonly Entry[], maxLag: number, logger: Logger): void {
  const heads = entries.filter((e) => e.healthy && e.head !== undefined).map((e) => e.head as number);
  const best = heads.length > 0 ? Math.max(...heads) : undefined;
  for (const entry of entries) {
    const lagBlocks = best !== undefined && entry.head !== undefined ? best - entry.head : 0;
    const lagging = entry.healthy && lagBlocks > maxLag;
    if (lagging !== entry.lagging) {
      const log = lagging ? logger.warn : logger.info;
      log(lagging ? "provider lags behind, skipping it" : "provider caught up", {
        at: "chain.provider",
        provider: entry.label,
        head: entry.head,
        bestHead: best,
        lagBlocks,
        maxLagBlocks: maxLag,
      });
    }
    entry.lagging = lagging;
  }
}
