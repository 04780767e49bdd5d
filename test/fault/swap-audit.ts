import { MaxUint256, Wallet, parseEther, type Interface, type TransactionResponse } from "ethers";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import type { StackChain } from "../harness/stack";
import { AMOUNT, type E2eStack } from "../e2e/e2e-fixture";
import { isCompleted, userFulfill, userPrepare, waitForEvent } from "../e2e/e2e-user";

/**
 * The user side of a swap, run by many users at once, and what the chains say afterwards: every router-sent
 * transaction in the blocks mined since a start block, by transfer, with its status and nonce.
 */
export interface SwapOutcome {
  readonly transactionId: string;
  readonly durationMs: number;
}

/** Fresh users (each on its own nonces), holding TEST on the sending chain with it approved, and gas on both. */
export async function fundUsers(s: E2eStack, count: number, swapsEach: number): Promise<E2eStack[]> {
  const users: E2eStack[] = [];
  for (let i = 0; i < count; i += 1) {
    const user = Wallet.createRandom().connect(s.sending.provider);
    for (const chain of [s.sending, s.receiving]) await chain.anvil.setBalance(user.address, parseEther("10"));
    await sendTx(nxtpContractAt("TestERC20", s.sending.deployment.token, s.sending.deployer), "mint", [
      user.address,
      AMOUNT * BigInt(swapsEach + 1),
    ]);
    await sendTx(nxtpContractAt("ERC20", s.sending.deployment.token, user), "approve", [
      s.sending.deployment.transactionManager,
      MaxUint256,
    ]);
    users.push({ ...s, user: new Wallet(user.privateKey, s.sending.provider) });
  }
  return users;
}

/** One whole swap: user prepare → router prepare on the receiving chain → user fulfill → router claim on the sending chain. */
export async function runSwap(u: E2eStack, stepTimeoutMs: number): Promise<SwapOutcome> {
  const startedAtMs = Date.now();
  const t = await userPrepare(u);
  const prepared = await waitForEvent(u.receiving, "prepared", t.transactionId, stepTimeoutMs);
  await userFulfill(u, prepared.txData);
  await waitForEvent(u.sending, "fulfilled", t.transactionId, stepTimeoutMs);
  if (!(await isCompleted(u.receiving, prepared.txData)))
    throw new Error(`${t.transactionId}: receiving side not completed`);
  return { transactionId: t.transactionId, durationMs: Date.now() - startedAtMs };
}

export interface RouterTx {
  readonly hash: string;
  readonly nonce: number;
  readonly block: number;
  readonly method: string;
  readonly transactionId?: string;
  readonly status: number | null;
}

export interface ChainAudit {
  readonly chainId: number;
  readonly txs: readonly RouterTx[];
  readonly reverted: readonly RouterTx[];
  /** Transfers with more than one mined router transaction of the same method. */
  readonly duplicates: ReadonlyArray<{ transactionId: string; method: string; count: number }>;
  /** Nonces missing between the first and the last mined one, and whether the chain's count follows the last. */
  readonly nonceGaps: readonly number[];
  readonly firstNonce?: number;
  readonly lastNonce?: number;
}

function transferIdOf(iface: Interface, data: string): { method: string; transactionId?: string } {
  const parsed = iface.parseTransaction({ data });
  if (!parsed) return { method: "unknown" };
  const arg = parsed.args[0] as
    { invariantData?: { transactionId?: string }; txData?: { transactionId?: string } } | undefined;
  return { method: parsed.name, transactionId: arg?.invariantData?.transactionId ?? arg?.txData?.transactionId };
}

/** Every transaction `from` sent in blocks [fromBlock, latest] of the chain's canonical history. */
export async function auditRouterTxs(chain: StackChain, from: string, fromBlock: number): Promise<ChainAudit> {
  const iface = chain.deployment.contracts.transactionManager.interface;
  const head = await chain.provider.getBlockNumber();
  const txs: RouterTx[] = [];
  for (let n = fromBlock; n <= head; n += 1) {
    const block = await chain.provider.getBlock(n, true);
    if (!block) throw new Error(`chain ${chain.chainId}: block ${n} missing`);
    for (const tx of block.prefetchedTransactions as TransactionResponse[]) {
      if (tx.from.toLowerCase() !== from.toLowerCase()) continue;
      const receipt = await chain.provider.getTransactionReceipt(tx.hash);
      const isTm = tx.to?.toLowerCase() === chain.deployment.transactionManager.toLowerCase();
      const decoded = isTm ? transferIdOf(iface, tx.data) : { method: tx.data === "0x" ? "transfer" : "other" };
      txs.push({ hash: tx.hash, nonce: tx.nonce, block: n, status: receipt?.status ?? null, ...decoded });
    }
  }
  const counts = new Map<string, number>();
  for (const tx of txs) {
    if (tx.transactionId)
      counts.set(`${tx.transactionId}|${tx.method}`, (counts.get(`${tx.transactionId}|${tx.method}`) ?? 0) + 1);
  }
  const duplicates = [...counts]
    .filter(([, c]) => c > 1)
    .map(([k, count]) => ({ transactionId: k.split("|")[0], method: k.split("|")[1], count }));
  const nonces = txs.map((t) => t.nonce).sort((a, b) => a - b);
  const nonceGaps: number[] = [];
  if (nonces.length > 0) {
    const have = new Set(nonces);
    for (let n = nonces[0]; n <= nonces[nonces.length - 1]; n += 1) if (!have.has(n)) nonceGaps.push(n);
  }
  return {
    chainId: chain.chainId,
    txs,
    reverted: txs.filter((t) => t.status !== 1),
    duplicates,
    nonceGaps,
    firstNonce: nonces[0],
    lastNonce: nonces[nonces.length - 1],
  };
}

/** Human-readable figures of an audit, for the test output and for a failure message. */
export function describeAudit(a: ChainAudit): string {
  const byMethod = new Map<string, number>();
  for (const t of a.txs) byMethod.set(t.method, (byMethod.get(t.method) ?? 0) + 1);
  return (
    `chain ${a.chainId}: ${a.txs.length} router txs (${[...byMethod].map(([m, c]) => `${m} ${c}`).join(", ")}), ` +
    `${a.reverted.length} reverted, ${a.duplicates.length} duplicated transfers, nonces ${a.firstNonce ?? "-"}..${a.lastNonce ?? "-"}` +
    `${a.nonceGaps.length ? ` GAPS ${a.nonceGaps.join(",")}` : " contiguous"}`
  );
}

/** p-th percentile (nearest rank) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Runs `count` jobs over `workers` parallel workers; worker w runs indices w, w + workers, … in order. */
export async function runPool<T>(
  count: number,
  workers: number,
  job: (index: number, worker: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  // A fixed share per worker (indices w, w + workers, …), never more: callers fund each worker's user for
  // ceil(count / workers) swaps (fundUsers), and a worker that took a slow one's turn would run out of tokens.
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = w; i < count; i += workers) results[i] = await job(i, w);
    }),
  );
  return results;
}
