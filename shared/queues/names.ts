/**
 * Every queue the processes meet on. BullMQ refuses ':' in queue names; chain ids keep names unique per chain.
 * One transaction queue per chain, consumed only by the holder of the chain's send lease (services/submitter/lease):
 * that lease, not the queue, is what keeps one nonce sequence per (chain, signer).
 */
export function txQueueName(chainId: number): string {
  assertChainId(chainId);
  return `tx-${chainId}`;
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
