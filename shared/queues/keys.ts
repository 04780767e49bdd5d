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

/** The poller's log cursor: the last block whose TransactionManager logs are stored. */
export function pollerCursorKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "cursor", chainId);
}

/** Set of alert ids (job ids, transfer keys) the chain's poller has already reported, so it reports each once. */
export function pollerAlertedKey(prefix: string, chainId: number): string {
  return routerKey(prefix, "alerted", chainId);
}
