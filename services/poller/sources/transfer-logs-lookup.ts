import { getAddress, zeroPadValue } from "ethers";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { TransferRecord } from "../../../shared/protocol/types";
import {
  TM_TOPICS,
  decodeTmLogs,
  isTransferEvent,
  type PreparedEvent,
  type TransferEvent,
} from "../../../shared/chain/tm-log-decoder";
import { completedRecord, prepareFieldsOf, preparedRecord } from "./log-mapping";
import type { ReportUndecodable } from "./undecodable-logs";

export interface TransferLogsQuery {
  readonly chainId: number;
  readonly provider: ChainProvider;
  readonly transactionManagerAddress: string;
  readonly routerAddress: string;
  readonly transactionId: string;
  readonly user: string;
  /** Searched newest first, down to here (the side's prepare block when known), in ranges of `maxRangeBlocks`. */
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly maxRangeBlocks: number;
  readonly reportUndecodable: ReportUndecodable;
}

/**
 * The records one transfer's TransactionManager logs on a chain describe: its prepare and, if any, its fulfill
 * or cancel. For the reconcile (reconcile.ts), when the contract says a side exists or completed that the
 * store does not show: the three Transaction* events index (user, router, transactionId), so the query is
 * exact and a range scan is cheap. Reads newest ranges first and stops at the prepare (the oldest event).
 */
export async function findTransferLogs(q: TransferLogsQuery): Promise<TransferRecord[]> {
  const pad = (address: string): string => zeroPadValue(getAddress(address), 32).toLowerCase();
  const topics = [
    [TM_TOPICS.prepared, TM_TOPICS.fulfilled, TM_TOPICS.cancelled],
    pad(q.user),
    pad(q.routerAddress),
    q.transactionId.toLowerCase(),
  ];
  const address = getAddress(q.transactionManagerAddress);
  const events: TransferEvent[] = [];
  for (let to = q.toBlock; to >= q.fromBlock; to -= q.maxRangeBlocks) {
    const from = Math.max(q.fromBlock, to - q.maxRangeBlocks + 1);
    const logs = await q.provider.read(
      (rpc) => rpc.getLogs({ address, topics, fromBlock: from, toBlock: to }),
      "getLogs",
    );
    const decoded = decodeTmLogs(logs.filter((l) => !l.removed));
    await q.reportUndecodable(decoded.undecodable);
    events.push(...decoded.events.filter(isTransferEvent));
    if (events.some((e) => e.kind === "prepared")) {
      break;
    }
  }
  events.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  const timestampOf = async (block: number): Promise<number> => {
    const found = await q.provider.getBlock(block);
    if (found === null) {
      throw new Error(`block ${block} not found`);
    }
    return found.timestamp;
  };
  const records: TransferRecord[] = [];
  let prepared: PreparedEvent | undefined;
  for (const event of events) {
    if (event.kind === "prepared") {
      prepared = event;
      records.push(preparedRecord(q.chainId, event, await timestampOf(event.blockNumber)));
    } else {
      const prepare =
        prepared === undefined ? undefined : prepareFieldsOf(prepared, await timestampOf(prepared.blockNumber));
      records.push(completedRecord(q.chainId, event, await timestampOf(event.blockNumber), prepare));
    }
  }
  return records;
}
