/**
 * The reservation scripts' own time in Redis with 100 000 open promises: every script must run in a
 * bounded time whatever the number of open or lapsed promises. Part of `npm run bench:auction` (bench/auction.ts),
 * on the bench's Redis under a prefix of its own, after the auction phases.
 *
 * Measured on the server, not the client: `INFO commandstats` (µs per EVALSHA) and `SLOWLOG` with a 0 µs threshold
 * (the slowest single call). The promises are spread as the router makes them: bids lapsing over the next 420 s
 * (bidExpiry + grace), one in ten pinned as a hard hold lapsing over the next hour.
 */
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { createBalanceStore } from "../shared/transfers/balance-store";
import {
  LAPSE_STEP_MS,
  createBidReservations,
  promiseLapseMs,
  type ReserveParams,
} from "../shared/transfers/bid-reservations";

const OPEN_PROMISES = Number(process.env.BENCH_OPEN_PROMISES ?? 100_000);
const CALLS = 1000;
const CHAIN = 1338;
const ASSET = "0x00000000000000000000000000000000000000a1";

interface ScriptTime {
  readonly name: string;
  /** Mean server time per call, µs. */
  readonly meanUs: number;
  /** The slowest call, µs. */
  readonly maxUs: number;
  readonly calls: number;
}

export async function benchReservationScripts(redis: Redis, prefix: string): Promise<ScriptTime[]> {
  const reservations = createBidReservations(redis, prefix);
  const balances = createBalanceStore(redis, prefix);
  const startMs = Math.floor(Date.now() / 1000) * 1000;
  const fresh = async (nowMs: number): Promise<void> => {
    await balances.setRouterBalance(CHAIN, ASSET, 10n ** 40n, nowMs);
    await balances.setGasBalance(1337, 10n ** 20n, nowMs);
    await balances.setGasBalance(CHAIN, 10n ** 20n, nowMs);
  };
  const key = (): string => `0x${randomBytes(32).toString("hex")}-0x${randomBytes(20).toString("hex")}`;
  const bid = (nowMs: number, transferKey = key(), commit = true): ReserveParams => ({
    sendingChainId: 1337,
    sendingAssetId: ASSET,
    receivingChainId: CHAIN,
    receivingAssetId: ASSET,
    transferKey,
    amount: BigInt(1 + Math.floor(Math.random() * 1e9)),
    nowMs,
    untilMs: nowMs + 1000 * (1 + Math.floor(Math.random() * 420)),
    maxAgeMs: 3_600_000 * 2,
    rateLimitMs: 500,
    minGasSending: 1n,
    minGasReceiving: 1n,
    commit,
  });

  // 100 000 open promises, in slices of 1 000 in flight.
  await fresh(startMs);
  const keys: string[] = [];
  for (let i = 0; i < OPEN_PROMISES; i += 1000) {
    await Promise.all(
      Array.from({ length: Math.min(1000, OPEN_PROMISES - i) }, async (_, j) => {
        const p = bid(startMs);
        await reservations.reserve(p);
        if ((i + j) % 10 === 0) {
          const untilMs = startMs + 1000 * Math.floor(Math.random() * 3600);
          await reservations.pin(CHAIN, ASSET, p.transferKey, untilMs, p.amount);
        } else {
          keys.push(p.transferKey);
        }
      }),
    );
  }

  const measure = async (name: string, run: () => Promise<unknown>, calls = CALLS): Promise<ScriptTime> => {
    await redis.config("SET", "slowlog-log-slower-than", "0");
    await redis.config("SET", "slowlog-max-len", String(calls + 100));
    await redis.slowlog("RESET");
    await redis.config("RESETSTAT");
    for (let i = 0; i < calls; i += 1) await run();
    const stats = String(await redis.info("commandstats"));
    const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
    const entries = (await redis.slowlog("GET", calls + 100)) as Array<[number, number, number, string[]]>;
    const maxUs = Math.max(0, ...entries.filter((e) => e[3]?.[0]?.toLowerCase() === "evalsha").map((e) => e[2]));
    await redis.config("SET", "slowlog-log-slower-than", "10000");
    const n = Number(evalsha?.[1] ?? 0);
    return { name, meanUs: n === 0 ? 0 : Number(evalsha?.[2]) / n, maxUs, calls: n };
  };

  const out: ScriptTime[] = [];
  out.push(await measure("reserve (bid)", () => reservations.reserve(bid(startMs))));
  out.push(await measure("reserve (quote)", () => reservations.reserve(bid(startMs, key(), false))));
  let k = 0;
  out.push(
    await measure("re-request of an open transfer", () => reservations.reserve(bid(startMs, keys[k++ % keys.length]))),
  );
  out.push(
    await measure("pin", () =>
      reservations.pin(CHAIN, ASSET, keys[k++ % keys.length] as string, startMs + 3_600_000, 1n),
    ),
  );
  out.push(await measure("release", () => reservations.release(CHAIN, ASSET, keys[k++ % keys.length] as string)));
  // The worst case: the first call after an hour of silence, when every bid and every hold lapses in that one call
  // (a sum per lapse step: about 400 of them), however many promises there were.
  const lateMs = promiseLapseMs(startMs + 3_600_000) + LAPSE_STEP_MS;
  await fresh(lateMs);
  out.push(
    await measure("reserve after an hour idle (every promise lapses)", () => reservations.reserve(bid(lateMs)), 1),
  );
  const left = await reservations.reservedTotal(CHAIN, ASSET);
  if (left > 10n ** 10n) throw new Error(`lapsed promises still counted: ${left}`);
  return out;
}

export function reportReservationScripts(times: readonly ScriptTime[]): void {
  process.stdout.write(`reservation scripts with ${OPEN_PROMISES} open promises (server time per EVALSHA):\n`);
  for (const t of times) {
    process.stdout.write(
      `  ${t.name}: mean ${t.meanUs.toFixed(1)} µs, max ${t.maxUs} µs over ${t.calls} call${t.calls === 1 ? "" : "s"}\n`,
    );
  }
}
