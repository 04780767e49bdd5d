import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import { nonceKey } from "../../shared/coordination/keys";
import { liveChildPids } from "../harness/child-process";
import { startSentinelGroup, type SentinelGroup } from "../harness/redis-sentinel";
import { waitFor } from "../harness/wait";
import {
  CHAIN_ID,
  startSubmitterStack,
  storeUnsentTransaction,
  submitterConfig,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "../integration/submitter-fixture";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * "The gap filler skips the replica wait": with `redis.minReplicas: 1`, the nonce-gap filler's re-send of
 * a stored transaction must wait for the replica like every other send. A job stored a signed transaction at the
 * missing nonce and stopped before its broadcast (its writes unacknowledged); the replica is frozen (SIGSTOP), so a
 * failover could still forget that record. Real primary, replica and three sentinels.
 */
// Shortened gap bound and polls (defaults: 10 s bound, 1 s polls) so the tracker fills within a second or two; the
// replica wait (what this asserts) runs at its shipped timeout.
const GAP = { pollIntervalMs: 50, nonceGapBoundMs: 1000, providerOptions: { headRefreshMs: 200 } };

describe("fault: the nonce-gap filler waits for the replicas", () => {
  let group: SentinelGroup;
  let s: SubmitterStack;
  let client: TxQueueClient | undefined;
  let submitter: RunningSubmitter | undefined;
  let replicaPid = 0;
  let frozen = false;
  const thaw = (): void => {
    if (frozen) process.kill(replicaPid, "SIGCONT");
    frozen = false;
  };

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 1, sentinels: 3 });
    s = await startSubmitterStack();
    const primary = await group.primaryPort();
    replicaPid = [...group.nodes].find(([port]) => port !== primary)?.[1].pid ?? 0;
  }, 120_000);

  afterAll(async () => {
    thaw();
    await submitter?.stop();
    await client?.close();
    await s?.stack.stop();
    await group?.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("a stored transaction at the missing nonce is not re-sent while the replica is frozen, and is once it runs", async () => {
    const prefix = uniquePrefix();
    const raw = submitterConfig(s, prefix, { confirmationTimeoutMs: 1500 }).raw;
    delete raw.redisUrl;
    raw.redis = { ...group.config, minReplicas: 1 };
    const config = loadConfig(raw, {}).config;
    client = await txQueueClient(`redis://127.0.0.1:${await group.primaryPort()}`, prefix);
    const logs = captureLogs();
    submitter = await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID, options: GAP });
    await waitFor("the sender term", () =>
      logs.lines().find((l) => l.at === "submitter.lease" && /sender lease acquired/.test(String(l.message))),
    );

    const gap = await s.chain.provider.getTransactionCount(s.signer, "pending");
    // From here the replica acknowledges nothing: the record below and the nonce are on the primary alone.
    process.kill(replicaPid, "SIGSTOP");
    frozen = true;
    // A job that stored its signed transaction at the missing nonce and stopped before broadcasting it.
    const hash = await storeUnsentTransaction(s, { redis: client.redis, prefix, jobId: "stopped-job", nonce: gap });
    await client.redis.set(nonceKey(prefix, CHAIN_ID, s.signer), String(gap + 1));

    // The tracker's fill attempt ends one way or the other: refused for the replica, or the stored bytes re-sent.
    const attempt = await waitFor(
      "the gap filler's attempt",
      () =>
        logs
          .lines()
          .find(
            (l) =>
              (l.at === "submitter.gap" && l.code === "REDIS_NOT_REPLICATED") ||
              (l.at === "submitter.gap" && /rebroadcast the stored transaction/.test(String(l.message))),
          ),
      30_000,
    );
    expect(attempt.code).toBe("REDIS_NOT_REPLICATED");
    await expect(s.chain.provider.getTransaction(hash)).resolves.toBeNull();

    thaw();
    await waitFor(
      "the stored transaction mined once the replica acknowledges",
      async () => (await s.chain.provider.getTransactionReceipt(hash)) ?? undefined,
      30_000,
    );
    await expect(s.chain.provider.getTransactionCount(s.signer, "latest")).resolves.toBe(gap + 1);
  }, 120_000);
});
