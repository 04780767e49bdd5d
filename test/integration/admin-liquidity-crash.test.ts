import { randomUUID } from "node:crypto";
import { parseEther } from "ethers";
import type { SendHookPoint } from "../../services/submitter/send/send-context";
import { TX_JOB, txJobId, txJobOptions, type AddLiquidityForJobData } from "../../shared/queues";
import { approvalRecordId, nonceKey, txRecordKey } from "../../shared/coordination/keys";
import { mintToken, nxtpContractAt, readBigInt } from "../harness/deploy";
import {
  HOOK_ENTRY,
  assertDistBuilt,
  spawnSubmitterChild,
  submitterCase,
  useSubmitterSuite,
} from "../fault/fault-fixture";
import { startSubmitter } from "../../services/submitter/start-submitter";
import { CHAIN_ID, routerBalance, submitterConfig } from "./submitter-fixture";
import { isMessage, captureLogs } from "../harness/logs";

/**
 * An add-liquidity-for job sends two transactions when the allowance lacks: the approval, then the add. The
 * submitter (dist/, a child process) is SIGKILLed after the approval's broadcast, and after the approval is
 * confirmed and saved (before the add exists); the restarted process must finish with one approval and one add
 * mined, on two consecutive nonces, and the router credited once.
 */
const CASES: ReadonlyArray<{ point: SendHookPoint }> = [
  { point: "after-broadcast" },
  { point: "after-confirmed-saved" },
];

describe("add-liquidity-for across a crash between its approval and its add (child processes)", () => {
  beforeAll(assertDistBuilt);
  const s = useSubmitterSuite("admin-liquidity-crash");

  it.each(CASES)("SIGKILL at the approval's $point: one approval, one add, credited once", async ({ point }) => {
    const { configFile, q } = await submitterCase(s);
    const token = s.chain.deployment.token;
    const tm = s.chain.deployment.transactionManager;
    const amount = parseEther("2");
    await mintToken(s.chain.deployment, s.signer, amount);
    const allowance = (): Promise<bigint> =>
      readBigInt(nxtpContractAt("ERC20", token, s.chain.provider), "allowance", [s.signer, tm]);
    expect(await allowance()).toBe(0n);
    const [nonceBefore, creditedBefore] = await Promise.all([
      s.chain.provider.getTransactionCount(s.signer, "latest"),
      routerBalance(s, s.signer, token),
    ]);

    const crashing = s.stopAfterTest(
      spawnSubmitterChild({
        name: `add-crash-at-${point}`,
        configFile,
        chainId: CHAIN_ID,
        instance: 0,
        entry: HOOK_ENTRY,
        env: { FAULT_CRASH_AT: point },
      }),
    );
    const requestId = randomUUID();
    const jobId = txJobId(TX_JOB.addLiquidityFor, requestId);
    const data: AddLiquidityForJobData = {
      chainId: CHAIN_ID,
      assetId: token,
      amount: amount.toString(),
      router: s.signer,
      requestId,
    };
    const job = await q.queue.add(TX_JOB.addLiquidityFor, data, txJobOptions(TX_JOB.addLiquidityFor, jobId));
    await crashing.exited;
    expect(crashing.child.signalCode).toBe("SIGKILL");
    // The first send of the job is its approval: the crash is between the approval and the add.
    expect(crashing.lines()).toContainEqual(
      expect.objectContaining({ message: "fault hook: SIGKILL", point, jobId: approvalRecordId(jobId) }),
    );
    await expect(q.record(jobId)).resolves.toBeUndefined();

    const restarted = s.stopAfterTest(
      spawnSubmitterChild({ name: `add-restart-after-${point}`, configFile, chainId: CHAIN_ID, instance: 0 }),
    );
    await restarted.waitForLine("the restart to be ready", isMessage("submitter ready"), 15_000);
    const result = await job.waitUntilFinished(q.events, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n--- restart output ---\n${restarted.output().slice(-4000)}`);
    });

    const approval = await q.record(approvalRecordId(jobId));
    const add = await q.record(jobId);
    expect(approval).toMatchObject({ status: "confirmed" });
    expect(add).toMatchObject({ status: "confirmed" });
    const minedOf = async (hashes: readonly string[]) =>
      (await Promise.all([...new Set(hashes)].map((h) => s.chain.provider.getTransactionReceipt(h)))).filter(
        (r) => r !== null,
      );
    expect(await minedOf(approval?.attempts.map((a) => a.hash) ?? [])).toHaveLength(1);
    expect((await minedOf(add?.attempts.map((a) => a.hash) ?? [])).map((r) => r?.hash)).toEqual([
      result.transactionHash,
    ]);
    const [latest, pending] = await Promise.all([
      s.chain.provider.getTransactionCount(s.signer, "latest"),
      s.chain.provider.getTransactionCount(s.signer, "pending"),
    ]);
    expect(latest).toBe(nonceBefore + 2);
    expect(pending).toBe(latest);
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(creditedBefore + amount);
    await expect(allowance()).resolves.toBe(0n);
  });

  it("at start, an unfinished approval record inside a nonce gap keeps the stored nonce (its job rebroadcasts it)", async () => {
    const { prefix, q } = await submitterCase(s);
    const config = submitterConfig(s, prefix).config;
    const pending = await s.chain.provider.getTransactionCount(s.signer, "pending");
    const requestId = randomUUID();
    const jobId = txJobId(TX_JOB.addLiquidityFor, requestId);
    const data: AddLiquidityForJobData = {
      chainId: CHAIN_ID,
      assetId: s.chain.deployment.token,
      amount: "1",
      router: s.signer,
      requestId,
    };
    await q.queue.add(TX_JOB.addLiquidityFor, data, txJobOptions(TX_JOB.addLiquidityFor, jobId));
    await q.queue.pause();
    // As if the approval's broadcast never reached a node and the process died: the nonce store is ahead.
    await q.redis.set(nonceKey(prefix, CHAIN_ID, s.signer), String(pending + 2));
    await q.redis.hset(
      txRecordKey(prefix, CHAIN_ID, approvalRecordId(jobId)),
      "version",
      "1",
      "record",
      JSON.stringify({ jobId: approvalRecordId(jobId), status: "sending", nonce: pending, attempts: [] }),
    );
    const logs = captureLogs();
    await (await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID })).stop();
    await expect(q.redis.get(nonceKey(prefix, CHAIN_ID, s.signer))).resolves.toBe(String(pending + 2));
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({ at: "submitter.nonce", jobId: approvalRecordId(jobId), nonce: pending }),
    );
  });
});
