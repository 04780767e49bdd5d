/**
 * Every queue the processes meet on. BullMQ refuses ':' in queue names; chain ids keep names unique per chain.
 * One transaction queue per chain, consumed only by the holder of the chain's send lease (services/submitter/lease):
 * that lease, not the queue, is what keeps one nonce sequence per (chain, signer).
 */
export function txQueueName(chainId: number): string {
  assertChainId(chainId);
  return `tx-${chainId}`;
}

/**
 * The Redis keys of a transaction queue's unfinished jobs as BullMQ lays them out (`<prefix>:<queue>:<state>`; the
 * version is pinned in package.json): the `wait` and `active` lists, the `delayed` and `prioritized` sorted sets, the
 * states BullMQ's getJobCounts("waiting", "active", "delayed", "prioritized") reads. The auction's status answer
 * counts them with LLEN and ZCARD instead of loading BullMQ (≈ 11 MB of a process's own memory) for one count;
 * test/integration/status.test.ts checks the count against BullMQ's own.
 */
export function txQueueBacklogKeys(prefix: string, chainId: number): { lists: string[]; sortedSets: string[] } {
  const base = `${prefix}:${txQueueName(chainId)}`;
  return { lists: [`${base}:wait`, `${base}:active`], sortedSets: [`${base}:delayed`, `${base}:prioritized`] };
}

export function chainIdOfTxQueue(name: string): number | undefined {
  const match = /^tx-([0-9]+)$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

function assertChainId(chainId: number): void {
  if (!Number.isSafeInteger(chainId) || chainId < 1) {
    throw new TypeError(`chain id must be a positive integer, got ${String(chainId)}`);
  }
}
