import type { ChainProvider } from "../../shared/chain/chain-provider";
import { decodeVariantTransactionData, encodeVariantTransactionData } from "../../shared/chain/contracts";
import { errorMessage } from "../../shared/errors";
import { invariantDigest, invariantOf } from "../../shared/protocol/digests";
import type { TransferRecord } from "../../shared/protocol/types";
import { variantVerdict, type VariantVerdict } from "../../shared/protocol/variant-verdict";
import type { PollerContext } from "./context";
import { transferKeyOf } from "./plan-action";
import { findTransferLogs } from "./sources/transfer-logs-lookup";
import { nameToLedger } from "./ledger-naming";
import { createUndecodableReporter } from "./sources/undecodable-logs";

export interface ReconcileResult {
  /** Both sides in the store agree with the contract now (possibly after storing what was missing). */
  readonly consistent: boolean;
  /** Records were stored from the chain: decide again from the store. */
  readonly updated: boolean;
}

export interface ReconcileOptions {
  /**
   * The receiving side is read, but a failed read of it does not count: for a cancel of a sending side that
   * fails verification, whose receiving chain id is the user's own (possibly forged, unreachable) data; the
   * plan's guard (no prepare-receiver job ever) covers that side then. A read that succeeds still counts.
   */
  readonly receivingReadBestEffort?: boolean;
  /**
   * A chain's head, read once for a batch of reconciles instead of once per record and side (the tick's batch
   * is read within the same moment, so the head is the same). Absent: each side reads the head itself.
   */
  readonly headOf?: (chainId: number) => Promise<number>;
}

/**
 * Compares both sides of a transfer in the store with `variantTransactionData` on their chains (a fresh
 * eth_call each) and repairs what a missed log left behind: a side the chain has but the store lacks, or a
 * fulfill or cancel of a side the store still shows Prepared, is looked up by its transactionId in the logs
 * and stored. What cannot be repaired (the completion's log not found, a store ahead of the chain) is logged
 * as an error once and the transfer is held: the router's claim must never be traded for a cancel.
 */
export async function reconcileTransfer(
  ctx: PollerContext,
  record: TransferRecord,
  opts: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const { sendingChainId, receivingChainId } = record.txData;
  const digest = invariantDigest(invariantOf(record.txData));
  let consistent = true;
  let updated = false;
  for (const chainId of [sendingChainId, receivingChainId]) {
    const chain = ctx.config.chainConfig[String(chainId)];
    if (chain === undefined) {
      continue; // an unconfigured receiving chain has no side the router could act on
    }
    const bestEffort = opts.receivingReadBestEffort === true && chainId === receivingChainId;
    const side = await compareSide(ctx, { record, chainId, digest, headOf: opts.headOf }).catch((err: unknown) => {
      if (!bestEffort) {
        throw err;
      }
      ctx.logger.debug("receiving side not readable; the cancel relies on its guard", {
        at: "poller.reconcile",
        chainId,
        error: errorMessage(err),
      });
      return { verdict: "agrees" as const, repaired: false, stored: undefined };
    });
    if (side.verdict === "agrees") {
      continue;
    }
    updated ||= side.repaired;
    if (!side.repaired) {
      consistent = false;
      await alertUnresolved(ctx, { record, chainId, verdict: side.verdict, stored: side.stored });
    }
  }
  const key = transferKeyOf(record);
  ctx.reconcile.setOnHold(key, !consistent);
  if (updated) {
    ctx.logger.warn("transfer records repaired from the chain: a log had been missed", {
      at: "poller.reconcile",
      transferKey: key,
      sendingChainId,
      receivingChainId,
    });
  }
  return { consistent, updated };
}

/** One side: the store's record against the contract, repaired from the logs when the store is behind. */
async function compareSide(
  ctx: PollerContext,
  p: { record: TransferRecord; chainId: number; digest: string; headOf?: (chainId: number) => Promise<number> },
): Promise<{ verdict: VariantVerdict; repaired: boolean; stored?: TransferRecord }> {
  const { record, chainId, digest } = p;
  const { transactionId, user } = record.txData;
  const chain = ctx.config.chainConfig[String(chainId)];
  const stored = chainId === record.chainId ? record : await ctx.store.get(chainId, transactionId, user);
  const provider = ctx.providerFor(chainId);
  const head = p.headOf ? await p.headOf(chainId) : await provider.getBlockNumber();
  const confirmedBlock = head - chain.confirmations + 1;
  const read = (blockTag: number | "latest"): Promise<string> =>
    readVariant(provider, chain.transactionManagerAddress, digest, blockTag);
  // At the confirmed block, the state the store is meant to hold; a store ahead of it is re-checked at the
  // head, since the side's own poller may have stored a block our provider had not confirmed yet.
  let verdict = variantVerdict(stored, await read(confirmedBlock));
  if (verdict === "store-ahead" && variantVerdict(stored, await read("latest")) === "agrees") {
    verdict = "agrees";
  }
  if (verdict === "agrees") {
    return { verdict, repaired: false, stored };
  }
  const repaired =
    verdict === "store-behind" ? await storeFromLogs(ctx, { chainId, stored, record, confirmedBlock, read }) : false;
  return { verdict, repaired, stored };
}

/** Finds the side's logs by transactionId and stores them; true when the store then agrees with the chain. */
async function storeFromLogs(
  ctx: PollerContext,
  p: {
    chainId: number;
    stored?: TransferRecord;
    record: TransferRecord;
    confirmedBlock: number;
    read: (blockTag: number) => Promise<string>;
  },
): Promise<boolean> {
  const chain = ctx.config.chainConfig[String(p.chainId)];
  const provider = ctx.providerFor(p.chainId);
  const head = p.confirmedBlock;
  const records = await findTransferLogs({
    chainId: p.chainId,
    provider,
    transactionManagerAddress: chain.transactionManagerAddress,
    routerAddress: ctx.routerAddress,
    transactionId: p.record.txData.transactionId,
    user: p.record.txData.user,
    fromBlock: p.stored?.txData.preparedBlockNumber ?? Math.max(0, head - ctx.reconcileSearchBlocks),
    toBlock: head,
    maxRangeBlocks: ctx.maxRangeBlocks,
    reportUndecodable: createUndecodableReporter(ctx.logger, ctx.alertOnce, p.chainId),
  });
  // Named before stored, like a source's batch: a side this finds is then no longer open, and no source asks again.
  await nameToLedger(ctx, { records });
  for (const found of records) {
    await ctx.store.put(found);
  }
  const now = await ctx.store.get(p.chainId, p.record.txData.transactionId, p.record.txData.user);
  return variantVerdict(now, await p.read(p.confirmedBlock)) === "agrees";
}

function readVariant(
  provider: ChainProvider,
  transactionManagerAddress: string,
  digest: string,
  blockTag: number | "latest",
): Promise<string> {
  return provider
    .call({ to: transactionManagerAddress, data: encodeVariantTransactionData(digest) }, blockTag)
    .then(decodeVariantTransactionData);
}

async function alertUnresolved(
  ctx: PollerContext,
  p: { record: TransferRecord; chainId: number; verdict: VariantVerdict; stored?: TransferRecord },
): Promise<void> {
  const key = transferKeyOf(p.record);
  if (!(await ctx.alertOnce(`reconcile-${p.chainId}-${p.verdict}-${key}`))) {
    return;
  }
  const side = p.chainId === p.record.txData.sendingChainId ? "sending" : "receiving";
  const fields = {
    at: "poller.reconcile",
    transferKey: key,
    side,
    sideChainId: p.chainId,
    verdict: p.verdict,
    storedStatus: p.stored?.status ?? null,
  };
  if (p.verdict === "store-behind") {
    // Typically the user's receiving fulfill: its signature is the router's claim on the sending side.
    ctx.logger.error(
      "transfer completed or prepared on chain but its log was not found: no action taken; the router's claim needs an operator",
      fields,
    );
  } else {
    ctx.logger.error(
      "transfer in the store is not on chain (re-org, chain reset or wrong data): held, no action taken",
      fields,
    );
  }
}

/** Reconcile without failing the caller: an RPC error leaves the transfer as it was, to be tried next tick. */
export async function tryReconcile(
  ctx: PollerContext,
  record: TransferRecord,
  opts: ReconcileOptions = {},
): Promise<ReconcileResult> {
  try {
    return await reconcileTransfer(ctx, record, opts);
  } catch (err) {
    ctx.logger.warn("reconcile failed; retried next tick", {
      at: "poller.reconcile",
      transferKey: transferKeyOf(record),
      error: errorMessage(err),
    });
    return { consistent: false, updated: false };
  }
}
