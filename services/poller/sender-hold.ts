import { errorMessage } from "../../shared/errors";
import { PREPARE_DELAY_MARGIN_SEC } from "../../shared/protocol/auction-expiry";
import type { TransferRecord } from "../../shared/protocol/types";
import { sameHex } from "../../shared/protocol/values";
import { TX_JOB } from "../../shared/queues";
import type { PollerContext } from "./context";
import { transferKeyOf, verifySender, type Plan } from "./plan-action";

/**
 * The hard hold of a transfer whose sending side names us (docs/auction.md, "Promises"). A hard hold is what
 * unprepared promises cannot push aside, so it is taken only for what the receiving prepare will really lock: a
 * sending prepare that passes the receiving prepare's own verification (verify-sender.ts: our signature on the
 * bid, its expiry, every field, the amount locked within tolerance), and no more than that prepare's receiving
 * amount. A 1-wei prepare with a bid for most of the liquidity holds nothing (it fails the amount check). The hold
 * goes as soon as the transfer will not be honoured: the sending side fails verification, the plan is a refusal or
 * a sender cancel, or the sending side is no longer Prepared.
 */

/** The auction's reservation of a bid covers confirmations until the receiving prepare (auction-expiry.ts margin). */
export const PIN_RESERVATION_MS = PREPARE_DELAY_MARGIN_SEC * 1000;

/** Our sending-side record was stored (created or updated): hold what it verifiably locked for, or drop the hold. */
export async function holdForSender(ctx: PollerContext, record: TransferRecord, nowSec: number): Promise<void> {
  if (record.status !== "Prepared") {
    await dropSenderHold(ctx, record);
    return;
  }
  // A receiving chain we do not serve has no promise to hold (and no TransactionManager to verify against).
  if (ctx.config.chainConfig[String(record.txData.receivingChainId)] === undefined) {
    return;
  }
  const verified = verifiedOrUndefined(ctx, record, nowSec);
  if (verified === undefined || !verified.ok) {
    await dropSenderHold(ctx, record);
    return;
  }
  const { receivingChainId, receivingAssetId } = record.txData;
  await guarded(ctx, record, "pin", () =>
    ctx.reservations.pin(
      receivingChainId,
      receivingAssetId,
      transferKeyOf(record),
      Date.now() + PIN_RESERVATION_MS,
      verified.receiverAmount,
    ),
  );
}

/** A decision on one of our sending sides that will not prepare the receiving side drops its hold. */
export async function dropHoldUnlessHonoured(ctx: PollerContext, record: TransferRecord, plan?: Plan): Promise<void> {
  const declined = plan?.kind === "refused" || (plan?.kind === "enqueue" && plan.job.name === TX_JOB.cancelSender);
  if (declined) {
    await dropSenderHold(ctx, record);
  }
}

/** Drops the hard hold of one of our sending sides (nothing for any other record). */
export async function dropSenderHold(ctx: PollerContext, record: TransferRecord): Promise<void> {
  const { sendingChainId, receivingChainId, receivingAssetId, router } = record.txData;
  if (record.chainId !== sendingChainId || !sameHex(router, ctx.routerAddress)) {
    return;
  }
  await guarded(ctx, record, "unpin", () =>
    ctx.reservations.unpin(receivingChainId, receivingAssetId, transferKeyOf(record)),
  );
}

/** The verification, or undefined when it throws: a record it cannot judge must not fail the tick that stores it. */
function verifiedOrUndefined(
  ctx: PollerContext,
  record: TransferRecord,
  nowSec: number,
): ReturnType<typeof verifySender> | undefined {
  try {
    return verifySender(ctx, record, nowSec);
  } catch (err) {
    ctx.logger.warn("sending side not verifiable for its hold", {
      at: "poller.reservation",
      transferKey: transferKeyOf(record),
      error: errorMessage(err),
    });
    return undefined;
  }
}

/** A failed hold change is logged, never thrown: the hold lapses by itself, and the tick goes on. */
async function guarded(
  ctx: PollerContext,
  record: TransferRecord,
  action: "pin" | "unpin",
  run: () => Promise<boolean>,
): Promise<void> {
  try {
    const changed = await run();
    if (changed) {
      ctx.logger.debug(`reservation ${action}`, { at: "poller.reservation", transferKey: transferKeyOf(record) });
    }
  } catch (err) {
    ctx.logger.warn(`reservation ${action} failed`, {
      at: "poller.reservation",
      transferKey: transferKeyOf(record),
      error: errorMessage(err),
    });
  }
}
