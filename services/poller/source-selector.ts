import { errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import type { TransferSource } from "./sources/transfer-source";

export interface SourceSelector {
  /** The subgraph when one is configured and within the sync buffer at `head`, else the logs source. */
  select(head: number): Promise<TransferSource>;
  /** The logs source, after the subgraph failed mid-sync: the chain itself is always there to read. */
  fallBack(err: unknown): TransferSource;
}

/**
 * Picks the transfer source per tick and logs only switches: one line when the poller moves to the logs
 * (warn, with the reason) or back to the subgraph (info), never one per tick.
 */
export function createSourceSelector(params: {
  logs: TransferSource;
  subgraph?: TransferSource;
  logger: Logger;
}): SourceSelector {
  const { logs, subgraph, logger } = params;
  let current: TransferSource["name"] | undefined;

  const use = (source: TransferSource, reason: string): TransferSource => {
    if (current !== source.name) {
      const fields = { at: "poller.source", source: source.name, previous: current ?? null, reason };
      if (source === logs && subgraph !== undefined) {
        logger.warn("subgraph not usable: reading TransactionManager logs", fields);
      } else {
        logger.info(
          `reading transfers from ${source.name === "logs" ? "TransactionManager logs" : "the subgraph"}`,
          fields,
        );
      }
      current = source.name;
    }
    return source;
  };

  return {
    select: async (head) => {
      if (subgraph === undefined) {
        return use(logs, "no subgraph configured");
      }
      let usable: boolean;
      try {
        usable = await subgraph.isUsable(head);
      } catch (err) {
        return use(logs, `subgraph sync check failed: ${errorMessage(err)}`);
      }
      return usable
        ? use(subgraph, "subgraph within the sync buffer")
        : use(logs, "no subgraph within the sync buffer");
    },
    fallBack: (err) => use(logs, `subgraph query failed: ${errorMessage(err)}`),
  };
}
