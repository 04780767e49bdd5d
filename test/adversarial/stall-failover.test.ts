import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startSubmitter } from "../../services/submitter/start-submitter";
import { senderLeaseKey, senderLeaseTokenKey } from "../../shared/coordination/keys";
import { createLease } from "../../shared/coordination/lease";
import { loadConfig } from "../../shared/config";
import { useSubmitterSuite } from "../fault/fault-fixture";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/wait";
import {
  STALL_MS,
  addJobs,
  broadcastCount,
  busyFor,
  expectEachSentOnce,
  expectNoStrayBroadcast,
} from "../integration/stall-fixture";
import { CHAIN_ID, submitterConfig, txQueueClient } from "../integration/submitter-fixture";

/**
 * Attack: Redis fails over (or restarts) while the sender's event loop is stalled past its lease's TTL. The new
 * server shows the picture of a plain stall (the lease key gone, the term counter unchanged) but may have lost the
 * term's writes (nonces handed out, records, holds), so resuming the lease there could sign a second transaction at
 * a nonce already used. The resume (shared/redis/scripts/lease-resume.lua) compares the server's identity (run_id
 * and replication id, read when the term began) and refuses on another server: only a new term's begin (the nonce
 * reconcile from the chain, the holds read back) follows, as before the resume existed. The Sentinel failover
 * itself: test/integration/submitter-failover.test.ts.
 */
describe("adversarial: the Redis server is replaced while the sender is stalled past its lease", () => {
  const s = useSubmitterSuite("stall-failover");
  let redis: RedisServer | undefined;

  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  it("the lease primitive: the same picture on a restarted server is not resumed (server-changed)", async () => {
    redis = await startRedis();
    const client = new Redis(redis.url);
    s.afterTest(() => client.disconnect());
    const key = `${uniquePrefix()}:lease`;
    const lease = createLease({ redis: client, key, termKey: `${key}-term`, ownerId: "a", ttlMs: 1_000 });
    const fence = await lease.tryAcquire();
    if (!fence) throw new Error("lease not taken");

    // A new server on the same port, no persistence; the term counter set as a replica that had it would hold it.
    const { port } = redis;
    await redis.stop();
    redis = await startRedis({ port });
    await client.set(`${key}-term`, String(fence.term));
    await expect(lease.renew()).resolves.toBe(false);
    await expect(lease.resume(fence)).resolves.toBe("server-changed");
    await expect(client.exists(key)).resolves.toBe(0);
    expect(lease.current()).toBeUndefined();
  });

  it("restarted from its append-only file during a 2.5 s stall: no resume, a new term (reconcile); each job sent once", async () => {
    const dir = mkdtempSync(join(s.scratchDir, "aof-"));
    redis = await startRedis({ appendOnlyDir: dir });
    const prefix = uniquePrefix();
    const raw = submitterConfig(s, prefix).raw;
    raw.redisUrl = redis.url;
    const q = await txQueueClient(redis.url, prefix);
    s.afterTest(() => q.close());
    const logs = captureLogs();
    const sender = await startSubmitter({
      config: loadConfig(raw, {}).config,
      logger: logs.logger,
      chainId: CHAIN_ID,
      options: { pollIntervalMs: 100 },
    });
    s.afterTest(() => sender.stop());
    const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
    await s.chain.anvil.setAutomine(false);
    const jobs = await addJobs(s, q, 20);
    await waitFor("the first broadcasts", () => broadcastCount(q, jobs) >= 5);

    // SIGKILLed and back on the same port from its append-only file (fsync always: nothing lost, but a new run_id),
    // then the stall: the lease key expires on the new server, the term counter is the one the term was taken at.
    const { port } = redis;
    process.kill(redis.pid, "SIGKILL");
    await redis.stop();
    redis = await startRedis({ appendOnlyDir: dir, port });
    busyFor(STALL_MS);

    const notResumed = await waitFor("the verdict", () => logs.find("submitter.lease", "was not resumed")[0]);
    expect(notResumed).toMatchObject({ outcome: "server-changed" });
    expect(logs.find("submitter.lease", "was resumed")).toEqual([]);
    const terms = await waitFor("a new term", () => {
      const taken = logs.find("submitter.lease", "sender lease acquired");
      return taken.length >= 2 && taken.map((l) => Number(l.leaseTerm));
    });
    // The counter survived (the stall's picture): the new term is the next one, after a reconcile of its own.
    expect(terms).toEqual([terms[0], terms[0] + 1]);
    await expect(q.redis.get(senderLeaseTokenKey(prefix, CHAIN_ID, sender.signerAddress))).resolves.toBe(
      String(terms[0] + 1),
    );
    await waitFor("the new term's reconcile", () => logs.find("submitter.nonce", "nonce reconcile").length >= 2);
    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);
    const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(q.events, 60_000)));

    await expectEachSentOnce(s, q, jobs, results, nonceBefore);
    expectNoStrayBroadcast(logs.lines(), results);
    await expect(q.redis.get(senderLeaseKey(prefix, CHAIN_ID, sender.signerAddress))).resolves.toMatch(
      new RegExp(`^${terms[1]}\\|`),
    );
  }, 120_000);
});
