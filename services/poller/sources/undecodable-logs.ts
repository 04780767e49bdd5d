import { undecodableLogFields, type UndecodableTmLog } from "../../../shared/chain/tm-log-decoder";
import type { Logger } from "../../../shared/logging/create-logger";
import type { AlertOnce } from "../alert-once";

/** Reports the undecodable logs of one read; the caller skips them. */
export type ReportUndecodable = (logs: readonly UndecodableTmLog[]) => Promise<void>;

/**
 * The poller's side of the undecodable-log rule (shared/chain/tm-log-decoder.ts): one error line per log,
 * with its block, transaction and index, once per chain across restarts (a re-read range or a reconcile that
 * finds the same log again says nothing new). The tick goes on: the log will never decode, and stopping at it
 * would stop every other transfer of the chain. The reconcile still compares each open record with the contract.
 */
export function createUndecodableReporter(logger: Logger, alertOnce: AlertOnce, chainId: number): ReportUndecodable {
  return async (logs) => {
    for (const log of logs) {
      if (await alertOnce(`undecodable-log-${chainId}-${log.transactionHash}-${log.logIndex}`)) {
        logger.error("undecodable TransactionManager log skipped", {
          at: "poller.logs",
          chainId,
          ...undecodableLogFields(log),
        });
      }
    }
  };
}
