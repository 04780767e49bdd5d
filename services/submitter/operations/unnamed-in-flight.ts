import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { TxRecordStore } from "../send/tx-record";

/** At most this many in-flight nonces are looked up in the nonce-jobs index (one HMGET); more counts as unnamed. */
const MAX_IN_FLIGHT_CHECKED = 4_096;

export interface InFlightNonces {
  /** The signer's mined transaction count. */
  readonly latest: number;
  /** Its count with the node's mempool. */
  readonly pending: number;
  /** Nonces in flight (latest ≤ n < pending) that no send record names: they may be anything the signer sent. */
  readonly unnamed: number[];
}

/**
 * The signer's transactions in flight on one chain that no send record names (the nonce-jobs index). After a Redis
 * failover that lost a record, its transaction is one of these until it is mined: a job that must know whether the
 * router already sent something (a withdrawal, a refund of the sending side) waits while any is left. Two
 * transaction counts at once, then one HMGET when anything is in flight.
 */
export async function unnamedInFlight(
  provider: Pick<ChainProvider, "getTransactionCount">,
  records: Pick<TxRecordStore, "unnamedNonces">,
  from: string,
): Promise<InFlightNonces> {
  const [latest, pending] = await Promise.all([
    provider.getTransactionCount(from, "latest"),
    provider.getTransactionCount(from, "pending"),
  ]);
  const inFlight = Array.from({ length: Math.max(0, pending - latest) }, (_, i) => latest + i);
  const unnamed = inFlight.length > MAX_IN_FLIGHT_CHECKED ? [latest] : await records.unnamedNonces(from, inFlight);
  return { latest, pending, unnamed };
}
