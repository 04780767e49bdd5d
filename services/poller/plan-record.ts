import type { TransferRecord } from "../../shared/protocol/types";
import type { CounterpartOf } from "./batch-reads";
import type { PollerContext } from "./context";
import { planReceiverSide, planSenderSide, transferKeyOf, type Plan, type ReceivingView } from "./plan-action";

/** One open record's plan, from its other side and (for a sending side) the receiving chain's view. */
export async function planFor(
  ctx: PollerContext,
  record: TransferRecord,
  p: {
    head: number;
    nowSec: number;
    viewOf: (chainId: number) => Promise<ReceivingView>;
    counterpartOf: CounterpartOf;
  },
): Promise<Plan | undefined> {
  const { sendingChainId, receivingChainId } = record.txData;
  if (sendingChainId === ctx.chainId) {
    const configured = ctx.config.chainConfig[String(receivingChainId)] !== undefined;
    const receiver = await p.counterpartOf(record);
    const receiving = configured ? await p.viewOf(receivingChainId) : undefined;
    return planSenderSide(ctx, { sender: record, receiver, nowSec: p.nowSec, head: p.head, receiving });
  }
  if (receivingChainId === ctx.chainId) {
    const sender = await p.counterpartOf(record);
    return planReceiverSide(ctx, { receiver: record, sender, nowSec: p.nowSec });
  }
  ctx.logger.warn("record on a chain that is neither its sending nor its receiving chain", {
    at: "poller.decide",
    chainId: ctx.chainId,
    transferKey: transferKeyOf(record),
  });
  return undefined;
}

/** The receiving chain through the store: its head, and whether its poller refreshed that view recently. */
export async function receivingView(ctx: PollerContext, chainId: number): Promise<ReceivingView> {
  const head = await ctx.store.getHead(chainId);
  const confirmations = ctx.config.chainConfig[String(chainId)]?.confirmations ?? 1;
  const fresh =
    head !== undefined && head.syncedBlock !== undefined && Date.now() - head.updatedAtMs <= ctx.receivingStaleMs;
  return { head, confirmations, fresh };
}
