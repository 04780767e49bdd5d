/**
 * Router-owned Redis keys (outside BullMQ's own), all under the deployment prefix. Defined once here so an
 * SRE can find every key the router writes, and processes agree on them without importing each other.
 */
export function routerKey(prefix: string, ...parts: ReadonlyArray<string | number>): string {
  return [prefix, "router", ...parts].join(":");
}

/**
 * A transaction job's crash-safe send state (a hash with a JSON `record` field), written by the submitter
 * before every broadcast; other processes read it to see whether a job may still have a live transaction.
 */
export function txRecordKey(prefix: string, chainId: number, jobId: string): string {
  return routerKey(prefix, "tx", chainId, jobId);
}

/**
 * The send record of an add-liquidity-for job's ERC-20 approval, a transaction of its own sent before the add
 * (services/submitter/operations/add-liquidity-for.ts): `txRecordKey(prefix, chainId, approvalRecordId(jobId))`.
 */
export function approvalRecordId(jobId: string): string {
  return `${jobId}-approve`;
}

/** The next nonce of one (chain, signer): one nonce sequence per pair, shared by every submitter instance. */
export function nonceKey(prefix: string, chainId: number, signerAddress: string): string {
  return routerKey(prefix, "nonce", chainId, signerAddress);
}

/**
 * One side of a transfer as observed on `chainId` (a TransferRecord as JSON), written by that chain's poller.
 * `transferKey` is `transferKey(transactionId, user)` from jobs.ts, never the transaction id alone.
 */
export function transferRecordKey(prefix: string, chainId: number, transferKey: string): string {
  return routerKey(prefix, "transfer", chainId, transferKey);
}

/** Sorted set of the transfer keys still Prepared on `chainId`, scored by their expiry (unix seconds). */
export function openTransfersKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "open", chainId);
}

/** The chain's head as last seen by its poller, with the block up to which its transfer records are complete. */
export function chainHeadKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "head", chainId);
}

/** The router's unlocked TransactionManager balance of one asset (hash: amount, updatedAtMs). */
export function routerBalanceKey(prefix: string, chainId: number, assetId: string): string {
  return routerKey(prefix, "balance", chainId, assetId.toLowerCase());
}

/** The signer's native balance on the chain (hash: amount, updatedAtMs). */
export function gasBalanceKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "gas", chainId);
}

/**
 * The poller's log cursor: the last block whose TransactionManager logs are stored, as JSON
 * `{block, hash, checkpoints: [{block, hash}], updatedAtMs}` (services/poller/sources/log-cursor.ts). The hashes let the poller detect a re-org or reset.
 */
export function pollerCursorKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "cursor", chainId);
}

/**
 * The poller lease of one chain: `<term>|<ownerId>` with a short TTL (POLLER_LEASE_TTL_MS), renewed by the
 * active poller; standbys take it once it lapses. Every write of the chain's cursor, transfer records, head and
 * balances checks this value atomically (services/poller/poller-lease.ts, shared/coordination/lease.ts).
 */
export function pollerLeaseKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "poller-lease", chainId);
}

/** The poller lease's term counter: never expires, so a term is never handed out twice. */
export function pollerLeaseTermKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "poller-lease-term", chainId);
}

/** Set of alert ids (job ids, transfer keys) the chain's poller has already reported, so it reports each once. */
export function pollerAlertedKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "alerted", chainId);
}

/**
 * The one decision taken for a transfer between its two router actions that exclude each other: "prepare"
 * (the receiving side) or "cancel-sender" (refund of the sending side). One key per transfer, not per chain:
 * `transferKey` is `transferKey(transactionId, user)`. Written only through shared/coordination/transfer-decision.ts.
 */
export function transferDecisionKey(prefix: string, transferKey: string): string {
  return routerKey(prefix, "decision", transferKey);
}

/**
 * The auction's rate limit of one transfer (`transferKey(transactionId, user)`, lowercase): a key that exists (with a
 * TTL of `requestLimit` ms) means a bid for that transfer was signed recently. Keyed on the transfer, never on the
 * payload's `user` alone: anyone may name any user, so a user-keyed stamp let a stranger get that user refused.
 */
export function auctionRateKey(prefix: string, transferKey: string): string {
  return routerKey(prefix, "rate", transferKey.toLowerCase());
}

/**
 * Liquidity promised on the receiving (chain, asset) by open bids and hard holds: a hash of decimal strings,
 * `total` and `hard` (what has not lapsed by `wm`, the last prune's time), per lapse time `b:<ms>` and `k:<ms>`
 * (what stops counting then), per transfer `p:<transferKey>` (its bids, or its hard hold); the layout is owned by
 * shared/transfers/bid-reservations.ts.
 */
export function bidReservationsKey(prefix: string, chainId: number, assetId: string): string {
  return routerKey(prefix, "reserved", chainId, assetId.toLowerCase());
}

/** Sorted set of the transfer keys in `bidReservationsKey`, scored by when the last of its bids or its hold lapses (ms). */
export function bidReservationExpiryKey(prefix: string, chainId: number, assetId: string): string {
  return routerKey(prefix, "reserved-until", chainId, assetId.toLowerCase());
}

/** Sorted set of the lapse times (ms) that have a `b:<ms>` sum in `bidReservationsKey`, scored by themselves. */
export function bidReservationLapseKey(prefix: string, chainId: number, assetId: string): string {
  return routerKey(prefix, "reserved-lapse", chainId, assetId.toLowerCase());
}

/**
 * The content claim of an admin money request (a withdrawal or a deposit, by its job name) for
 * `CONTENT_CLAIM_WINDOW_MS` (services/admin/operations/content-claim.ts): a string holding its job id, so an
 * identical request without the first one's X-Request-Id is answered by that job instead of a new one.
 */
export function adminRequestContentKey(prefix: string, kind: string, contentHash: string): string {
  return routerKey(prefix, kind, contentHash);
}

/**
 * An operator's request (POST /process-active-transactions) that the chain's poller reconcile and decide every
 * open transfer again at its next tick: a string holding the request time (ms). The poller deletes it, only if
 * unchanged, once such a tick completed (services/poller/reconcile-request.ts).
 */
export function reconcileRequestKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "reconcile-request", chainId);
}

/**
 * One process's heartbeat (shared/metrics/heartbeat.ts): a JSON string with a TTL, rewritten every few seconds
 * while the process runs. `processId` is `<role>[-<chain>]-<instance>`, e.g. `submitter-1337-0`.
 */
export function heartbeatKey(prefix: string, processId: string): string {
  return routerKey(prefix, "heartbeat", processId);
}

/** Hash of every process that ever wrote a heartbeat (field: processId, value: its last heartbeat JSON). */
export function heartbeatsKey(prefix: string): string {
  return routerKey(prefix, "heartbeats");
}

/**
 * The sender lease of one (chain, signer): `<term>|<ownerId>` (shared/coordination/lease.ts) with a short TTL, renewed
 * by its holder's heartbeat. Only the holder assigns nonces and broadcasts; every write of a send record or of the nonce
 * store checks this value atomically (a fencing token), so a paused old holder that wakes up writes nothing.
 */
export function senderLeaseKey(prefix: string, chainId: number, signerAddress: string): string {
  return routerKey(prefix, "sender-lease", chainId, signerAddress);
}

/** The lease's term counter (the fencing token): never expires, so a term is never handed out twice. */
export function senderLeaseTokenKey(prefix: string, chainId: number, signerAddress: string): string {
  return routerKey(prefix, "sender-lease-token", chainId, signerAddress);
}

/**
 * Which job holds each nonce of one (chain, signer): a hash nonce → job id, written with every send record that
 * has an attempt at that nonce. The sender's nonce-gap filler reads it to rebroadcast the stored transaction of
 * a missing nonce, even one whose job has failed or was removed; entries below the chain's count are pruned.
 */
export function nonceJobsKey(prefix: string, chainId: number, signerAddress: string): string {
  return routerKey(prefix, "nonce-jobs", chainId, signerAddress);
}

/**
 * Liquidity held on one (chain, signer) by its sent-but-unmined transactions (receiving prepares, withdrawals):
 * a hash with one field per job id (JSON: asset, amount, its tx record's key, the term that wrote it and, once
 * the transaction is seen mined, the block) and a `version` token every write replaces. Written only by the
 * holder of the chain's sender lease, fenced like the send records (services/submitter/liquidity-in-flight.ts).
 */
export function liquidityHoldsKey(prefix: string, chainId: number, signerAddress: string): string {
  return routerKey(prefix, "liquidity-holds", chainId, signerAddress);
}

/**
 * One auction request's claim (services/auction/request-claims.ts): the instance NATS hands the request to
 * creates it and answers; a live instance takes over a claim whose owner stopped renewing it (or a request
 * nobody claimed). A string `<state>|<token>|<leaseUntilMs>[|<amountReceived>|<bidExpiry>|<gasFee>]` (state `c`
 * claimed, `r` reserved, with the bid's fields) or `d` (answered or refused for good), kept for 30 s.
 * `requestId` is a hash of the request's subject and body.
 */
export function auctionClaimKey(prefix: string, requestId: string): string {
  return routerKey(prefix, "auction-claim", requestId);
}

/**
 * Clean-up mode switched on at run time (`npm run drain`, docs/operating.md#drain): while this key exists the
 * auction's reservation step refuses every new bid with RouterInCleanUpMode, atomically, so no bid is signed
 * after the SET returns; open transfers, jobs and relays still finish. Value: JSON `{sinceMs}`. The config's
 * `cleanUpMode` does the same for a process's whole life; `npm run drain -- --off` removes the key.
 */
export function cleanUpModeKey(prefix: string): string {
  return routerKey(prefix, "clean-up-mode");
}
