/**
 * `npx tsc -p tsconfig.build.json && node dist/bench/replica-wait.js`: what `redis.minReplicas: 1` adds to a
 * broadcast and to a bid (shared/coordination/replication.ts), with one replica on loopback. Starts a primary and a
 * replica (redis-server, appendonly no), then times, sequentially and with 50 in flight on one connection:
 *   broadcast: the transaction record's write (a ~1.5 KB hash field, as tx-record.ts stores it), with and without
 *              the replica wait after it;
 *   bid:       the reservation step (bid-reservations.ts reserve), with and without the replica wait after it.
 * Prints p50/p99 per step and the added latency (p50 of "with" minus p50 of "without"). Self-contained: no test/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { redisServerBinary } from "../scripts/local/binaries";
import { getFreePort } from "../scripts/local/free-port";
import { redisAnswers, redisArgs, whileStarting } from "../scripts/local/probes";
import { ensureReplicated, replicationProbeKey } from "../shared/coordination/replication";
import { createBalanceStore } from "../shared/transfers/balance-store";
import { createBidReservations } from "../shared/transfers/bid-reservations";
import { pollUntil } from "../shared/timing";
import { percentile } from "./support";

const ROUNDS = 2_000;
const IN_FLIGHT = 50;
const PREFIX = "bench";
const SETTINGS = { minReplicas: 1, ackTimeoutMs: 1_000, probeKey: replicationProbeKey(PREFIX) };

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  const redisClients: Redis[] = [];
  try {
    const [primaryPort, replicaPort] = [await getFreePort(), await getFreePort()];
    children.push(spawn(redisServerBinary(), redisArgs(primaryPort), { stdio: "ignore" }));
    children.push(
      spawn(redisServerBinary(), [...redisArgs(replicaPort), "--replicaof", "127.0.0.1", String(primaryPort)], {
        stdio: "ignore",
      }),
    );
    await pollUntil(
      "redis primary",
      whileStarting(() => redisAnswers(primaryPort, 500)),
    );
    await pollUntil(
      "redis replica",
      whileStarting(() => redisAnswers(replicaPort, 500)),
    );
    const redis = new Redis({ host: "127.0.0.1", port: primaryPort });
    redisClients.push(redis);
    await pollUntil("the replica to sync", async () => Number(await redis.call("WAIT", 1, 100)) >= 1);

    const record = JSON.stringify({ raw: `0x${randomBytes(700).toString("hex")}` });
    let n = 0;
    const writeRecord = async (): Promise<void> => {
      n += 1;
      await redis.hset(`${PREFIX}:router:tx:1337:job-${n % 500}`, "record", record);
    };
    const balances = createBalanceStore(redis, PREFIX);
    await balances.setRouterBalance(1338, "0x0000000000000000000000000000000000000001", 10n ** 30n);
    await balances.setGasBalance(1337, 10n ** 20n);
    await balances.setGasBalance(1338, 10n ** 20n);
    const reservations = createBidReservations(redis, PREFIX);
    const reserve = async (): Promise<void> => {
      n += 1;
      const nowMs = Date.now();
      const outcome = await reservations.reserve({
        sendingChainId: 1337,
        sendingAssetId: "0x0000000000000000000000000000000000000002",
        receivingChainId: 1338,
        receivingAssetId: "0x0000000000000000000000000000000000000001",
        transferKey: `0x${n.toString(16).padStart(64, "0")}:0xaa`,
        amount: 1n,
        nowMs,
        untilMs: nowMs + 60_000,
        maxAgeMs: 3_600_000,
        rateLimitMs: 0,
        minGasSending: 1n,
        minGasReceiving: 1n,
        commit: true,
      });
      if (outcome.code !== "ok") throw new Error(`reserve: ${outcome.code} ${outcome.detail}`);
    };
    const waited = (step: () => Promise<void>) => async (): Promise<void> => {
      await step();
      await ensureReplicated(redis, SETTINGS);
    };

    console.log(`one replica on loopback, ${ROUNDS} rounds each (p50 / p99 in ms)`);
    for (const [name, step] of [
      ["broadcast: record write", writeRecord],
      ["bid: reservation", reserve],
    ] as const) {
      for (const inFlight of [1, IN_FLIGHT]) {
        const plain = await time(step, inFlight);
        const withWait = await time(waited(step), inFlight);
        console.log(
          `${name.padEnd(26)} in flight ${String(inFlight).padStart(2)}: ` +
            `without ${fmt(plain)}, with wait ${fmt(withWait)}, added p50 ${(withWait.p50 - plain.p50).toFixed(3)} ms`,
        );
      }
    }
  } finally {
    for (const client of redisClients) client.disconnect();
    for (const child of children) child.kill("SIGKILL");
  }
}

async function time(step: () => Promise<void>, inFlight: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 100; i += 1) await step(); // warm-up
  const samples: number[] = [];
  let left = ROUNDS;
  const worker = async (): Promise<void> => {
    while (left > 0) {
      left -= 1;
      const started = performance.now();
      await step();
      samples.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) };
}

function fmt(t: { p50: number; p99: number }): string {
  return `${t.p50.toFixed(3)} / ${t.p99.toFixed(3)}`;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
