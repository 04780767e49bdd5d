import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ZeroAddress } from "ethers";
import { sleep } from "../../shared/timing";
import { routerBalanceKey } from "../../shared/coordination/keys";
import {
  MIN_GAS,
  RECEIVING,
  SENDING,
  sdkPayload,
  startAuctionStack,
  startClient,
  writeBalances,
  type AuctionStack,
  type Client,
} from "../integration/auction-fixture";
import { DIST, assertDistBuilt, supervise, type Supervised } from "./router-procs";
import { waitFor } from "../harness/wait";
import { randomMnemonic } from "../harness/mnemonic";
import { uniquePrefix } from "../harness/prefix";

/**
 * Auction instances as real processes (dist/services/auction/main.js), restarted 250 ms
 * after they die as PM2 with ecosystem.config.js does. Every instance receives every request and one claims it in
 * Redis: with two instances a SIGKILLed one costs no request, not even those it was answering (a live instance
 * takes them over), and none is answered twice, not even with the same bid (the settled notice travels behind each
 * answer: docs/auction.md, "Instances and failures"); an owner paused past its lease cannot answer once resumed; a
 * lone instance answers again soon after its restart (RESTART_ANSWER_BOUND_MS).
 */
/** 200 requests in 4 s, as bursts of 25 every 500 ms. */
const REQUESTS = 200;
const BURST = 25;
const BURST_GAP_MS = 500;
/**
 * A lone instance answers again within about 2 s of its restart on a quiet machine (bench:recovery, "auction
 * (1 instance)", reports the figure against that target). The test's bound is the one test/e2e/pm2.test.ts gives
 * PM2's relaunch: a loaded CI run measured 2 045 ms against a 2 s bound, and a process that never comes back
 * still fails here.
 */
const RESTART_ANSWER_BOUND_MS = 8_000;
/** Kills per run of the stream test, one per round, each moment in turn (FAULT_AUCTION_KILLS=12 to measure more). */
const KILL_ROUNDS = Number(process.env.FAULT_AUCTION_KILLS ?? 3);
type KillAt = "answering" | "sent" | "answers-in";
const KILL_MOMENTS: readonly KillAt[] = ["answering", "sent", "answers-in"];

describe("fault: auction instances killed", () => {
  let s: AuctionStack | undefined;
  let client: Client | undefined;
  let dir: string;
  const running: Supervised[] = [];

  beforeAll(async () => {
    assertDistBuilt();
    s = await startAuctionStack();
    client = await startClient(s);
    dir = mkdtempSync(join(tmpdir(), "fault-auction-"));
  }, 120_000);

  afterEach(async () => {
    for (const p of running.splice(0)) await p.stop();
  });

  afterAll(async () => {
    await client?.close();
    await s?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The config auctionConfig() loads, as the file a process reads. */
  const writeConfig = (a: AuctionStack, prefix: string, logLevel = "info"): string => {
    const chain = (chainId: number): Record<string, unknown> => ({
      providers: [a.stack.chain(chainId).anvil.url],
      transactionManagerAddress: a.stack.chain(chainId).deployment.transactionManager,
      confirmations: 1,
      gasStations: [a.stationUrl],
      nativeMainnetEquivalent: ZeroAddress,
      minGas: MIN_GAS.toString(),
    });
    const raw = {
      adminToken: "fault-test-admin-token-0123456789",
      mnemonic: randomMnemonic(),
      logLevel,
      redisUrl: a.stack.redis?.url,
      redisPrefix: prefix,
      messagingUrl: a.natsUrl,
      authUrl: a.auth.url,
      requestLimit: 0,
      metricsPort: 20_000 + Math.floor(Math.random() * 30_000),
      swapPools: [
        {
          assets: [
            { chainId: SENDING, assetId: a.sendingToken, mainnetEquivalent: a.mainnetToken },
            { chainId: RECEIVING, assetId: a.receivingToken, mainnetEquivalent: a.mainnetToken },
          ],
        },
      ],
      chainConfig: {
        "1": {
          providers: [a.stack.chain(1).anvil.url],
          transactionManagerAddress: a.stack.chain(1).deployment.transactionManager,
          priceOracleAddress: a.stack.chain(1).deployment.priceOracle,
        },
        [String(SENDING)]: chain(SENDING),
        [String(RECEIVING)]: chain(RECEIVING),
      },
    };
    const file = join(dir, `${prefix}.json`);
    writeFileSync(file, JSON.stringify(raw));
    return file;
  };

  const startInstances = (configFile: string, count: number): Supervised[] =>
    Array.from({ length: count }, (_, i) => {
      const p = supervise({
        name: `auction-${i}`,
        entry: join(DIST, "auction/main.js"),
        env: { ROUTER_CONFIG_FILE: configFile, NODE_APP_INSTANCE: String(i) },
      });
      running.push(p);
      return p;
    });

  /** A bid arrives for a fresh request within `timeoutMs` (asked again every 250 ms); resolves with the time it took. */
  const answeredWithin = async (c: Client, a: AuctionStack, timeoutMs: number): Promise<number> => {
    const startedAtMs = Date.now();
    for (;;) {
      const inbox = c.request(sdkPayload(a));
      const reply = await c.responseTo(inbox, 250).catch(() => undefined);
      if (reply) return Date.now() - startedAtMs;
      if (Date.now() - startedAtMs > timeoutMs) throw new Error(`no bid within ${timeoutMs} ms`);
    }
  };

  /** Both instances run and have subscribed (each logs "auction started" once it serves). */
  const bothServing = async (a: AuctionStack, c: Client, prefix: string, procs: Supervised[]): Promise<void> => {
    await waitFor(
      "both instances serving",
      async () => {
        await writeBalances(a, prefix);
        await answeredWithin(c, a, 30_000);
        return procs.every((p) => /"auction started"/.test(p.output())) ? true : undefined;
      },
      40_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${outputsOf(procs)}`);
    });
  };
  const outputsOf = (procs: Supervised[]): string =>
    procs.map((p) => `--- ${p.name} ---\n${p.output().slice(-3000)}`).join("\n");
  /** Every takeover line still in the (capped) outputs: which request, and how long after its arrival. */
  const takeoverLines = (procs: Supervised[]): Array<{ transactionId: string; ageMs: number; resend: boolean }> =>
    procs
      .flatMap((p) => p.output().split("\n"))
      .filter((line) => line.startsWith("{") && line.includes('"auction.takeover"')) // the cap may cut the first
      .map((line) => JSON.parse(line) as { transactionId: string; ageMs: number; resend: boolean });

  /**
   * One stream of REQUESTS with `victim` SIGKILLed in the middle of a burst (the queue group splits each burst):
   * - `answering`: once it has logged its first answer of the burst; it has then just sent its batch of answers,
   *   the moment that used to repeat bids;
   * - `sent`: right after the burst is sent; it holds its whole share unread or unanswered;
   * - `answers-in`: once the client has the burst's first answers; it is often between reserving and sending.
   */
  const streamWithKill = async (
    a: AuctionStack,
    c: Client,
    procs: Supervised[],
    victim: Supervised,
    killAt: KillAt,
  ) => {
    const sent: Array<{ inbox: string; atMs: number; txId: string }> = [];
    let killed = false;
    for (let burst = 0; burst < REQUESTS / BURST; burst += 1) {
      for (let i = 0; i < BURST; i += 1) {
        const payload = sdkPayload(a);
        sent.push({ inbox: c.request(payload), atMs: Date.now(), txId: String(payload.transactionId) });
      }
      if (burst >= REQUESTS / BURST / 2 && !killed) {
        const txIds = sent.slice(-BURST).map((r) => r.txId);
        const answeredOne = (): boolean =>
          victim
            .output()
            .slice(-20_000)
            .split("\n")
            .some((line) => line.includes('"auction answered"') && txIds.some((txId) => line.includes(txId)));
        const inboxes = sent.slice(-BURST).map((r) => r.inbox);
        const answersIn = (): boolean => inboxes.filter((inbox) => c.responsesTo(inbox).length > 0).length >= 3;
        if (killAt === "answering") {
          await waitFor("the victim's first answer of the burst", () => answeredOne() || undefined, 5_000, 1);
        } else if (killAt === "answers-in") {
          await waitFor("the first answers of the burst", () => answersIn() || undefined, 5_000, 1);
        }
        killed = victim.signal("SIGKILL");
      }
      await sleep(BURST_GAP_MS);
    }
    // Each request answered (a takeover comes within a few hundred ms); then one more round trip on the client's
    // connection, so a second answer to any of them would have arrived too.
    await waitFor(
      "every request answered",
      async () => (sent.every((r) => c.responsesTo(r.inbox).length > 0) ? true : undefined),
      10_000,
    ).catch(() => undefined);
    await c.responseTo(c.request(sdkPayload(a)), 10_000);
    await c.messaging.flush();
    const counts = sent.map((r) => c.responsesTo(r.inbox).length);
    const distinct = sent.map((r) => new Set(c.responsesTo(r.inbox).map((res) => JSON.stringify(res.data))).size);
    const latencies = sent
      .flatMap((r) =>
        c
          .responsesTo(r.inbox)
          .slice(0, 1)
          .map((res) => res.receivedAtMs - r.atMs),
      )
      .sort((x, y) => x - y);
    // This round's takeover lines (the outputs are capped, so they are matched, not counted from the start).
    const txIds = new Set(sent.map((r) => r.txId));
    const takeovers = takeoverLines(procs).filter((line) => txIds.has(line.transactionId));
    const ages = takeovers.map((line) => line.ageMs).sort((x, y) => x - y);
    return {
      sent,
      killed,
      unanswered: counts.flatMap((n, i) => (n === 0 ? [i] : [])),
      // Two different bids for one request would be a second bid; the same bid twice is a repeated answer too.
      twice: distinct.flatMap((n, i) => (n > 1 ? [i] : [])),
      resent: counts.flatMap((n, i) => (n > 1 && distinct[i] === 1 ? [i] : [])),
      takeovers: ages.length,
      // Taken over in state r (reserved): the owner may have published already, the case that used to repeat bids.
      reservedTakeovers: takeovers.filter((line) => line.resend).length,
      takeoverAgeMaxMs: ages[ages.length - 1],
      latencyMs: (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))],
    };
  };

  it(
    "two instances: SIGKILL one mid-stream of requests, at three moments; every request gets one bid, once",
    async () => {
      if (!s || !client) throw new Error("no stack");
      const a = s;
      const c = client;
      const prefix = uniquePrefix();
      await writeBalances(a, prefix);
      const procs = startInstances(writeConfig(a, prefix), 2);
      await bothServing(a, c, prefix, procs);
      const totals = {
        requests: 0,
        unanswered: 0,
        twice: 0,
        resent: 0,
        takeovers: 0,
        reservedTakeovers: 0,
        kills: 0,
        heldAtKill: 0,
      };
      for (let round = 0; round < KILL_ROUNDS; round += 1) {
        // Each round kills the other instance: the one restarted by the previous round is killed in the next.
        const victim = procs[round % procs.length];
        const killAt = KILL_MOMENTS[round % KILL_MOMENTS.length];
        const restartsBefore = victim.restarts();
        await writeBalances(a, prefix);
        const r = await streamWithKill(a, c, procs, victim, killAt);
        process.stdout.write(
          `auction kill round ${round + 1}/${KILL_ROUNDS} (${killAt}): ${REQUESTS} requests, ${REQUESTS - r.unanswered.length} answered, ` +
            `unanswered #${r.unanswered.join(",") || "none"}, two different bids #${r.twice.join(",") || "none"}, ` +
            `the same bid twice #${r.resent.join(",") || "none"}; takeovers ${r.takeovers} (${r.reservedTakeovers} reserved, max age ${r.takeoverAgeMaxMs} ms); ` +
            `request → answer p50 ${r.latencyMs(0.5)} ms, p99 ${r.latencyMs(0.99)} ms, max ${r.latencyMs(1)} ms\n`,
        );
        for (const i of [...r.unanswered, ...r.twice, ...r.resent]) {
          const lines = procs.flatMap((p) =>
            p
              .output()
              .split("\n")
              .filter((line) => line.includes(r.sent[i].txId)),
          );
          process.stdout.write(`request #${i} (${r.sent[i].txId}):\n${lines.join("\n")}\n`);
        }
        totals.requests += REQUESTS;
        totals.unanswered += r.unanswered.length;
        totals.twice += r.twice.length;
        totals.resent += r.resent.length;
        totals.takeovers += r.takeovers;
        totals.reservedTakeovers += r.reservedTakeovers;
        totals.kills += r.killed ? 1 : 0;
        // A kill as the burst is sent always lands on requests the victim holds (at `answering` it may have sent
        // its whole share already: nothing to take over, which is right).
        if (killAt === "sent") totals.heldAtKill += r.takeovers > 0 ? 1 : 0;
        // The victim is back (respawned and serving) before the next round kills the other one.
        await victim.respawned(restartsBefore);
        await waitFor(
          `${victim.name} serving again`,
          async () => {
            const out = victim.output(); // capped: count nothing, look past the last exit
            return out.slice(out.lastIndexOf("exited: ")).includes('"auction started"') || undefined;
          },
          30_000,
        );
      }
      process.stdout.write(
        `auction kill totals: ${totals.kills} kills, ${totals.requests} requests, ${totals.unanswered} lost, ` +
          `${totals.twice} with two different bids, ${totals.resent} with the same bid twice, ${totals.takeovers} takeovers (${totals.reservedTakeovers} reserved)\n`,
      );
      expect(totals).toMatchObject({
        unanswered: 0,
        twice: 0,
        resent: 0,
        kills: KILL_ROUNDS,
        heldAtKill: Array.from({ length: KILL_ROUNDS }, (_, i) => KILL_MOMENTS[i % KILL_MOMENTS.length]).filter(
          (m) => m === "sent",
        ).length,
      });
    },
    60_000 + KILL_ROUNDS * 60_000,
  );

  it("a paused owner (SIGSTOP) loses its request to a live instance and cannot answer it once resumed", async () => {
    if (!s || !client) throw new Error("no stack");
    const a = s;
    const c = client;
    const prefix = uniquePrefix();
    await writeBalances(a, prefix);
    const procs = startInstances(writeConfig(a, prefix, "debug"), 2);
    await bothServing(a, c, prefix, procs);
    // No balance: whoever claims the request waits for cold data (renewing its claim), which the log shows.
    await a.redis.del(routerBalanceKey(prefix, RECEIVING, a.receivingToken));
    const payload = sdkPayload(a);
    const txId = String(payload.transactionId);
    const inbox = c.request(payload);
    const logged = (p: Supervised, pattern: string): boolean =>
      p
        .output()
        .split("\n")
        .some((line) => line.includes(pattern) && line.includes(txId));
    const owner = await waitFor(
      "the owner waiting for cold data",
      async () => procs.find((p) => logged(p, "auction waiting for cold data")),
      5_000,
    );
    owner.signal("SIGSTOP");
    const other = procs.find((p) => p !== owner) as Supervised;
    try {
      await waitFor(
        "the other instance taking over",
        async () => logged(other, "auction.takeover") || undefined,
        5_000,
      );
      await writeBalances(a, prefix);
      await c.responseTo(inbox, 5_000);
    } finally {
      owner.signal("SIGCONT");
    }
    // Resumed within its cold-retry window, the old owner retries with fresh balances: the reservation step is
    // fenced on its claim token, so it is refused (ClaimLost) instead of bidding a second time.
    const refusedLine = await waitFor(
      "the resumed owner's outcome",
      async () =>
        owner
          .output()
          .split("\n")
          .find((line) => line.includes("auction.outcome") && line.includes(txId)),
      10_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${outputsOf(procs)}`);
    });
    await c.responseTo(c.request(sdkPayload(a)), 10_000);
    await c.messaging.flush();
    expect(c.responsesTo(inbox)).toHaveLength(1);
    expect(JSON.parse(refusedLine)).toMatchObject({ code: "ClaimLost" });
  }, 90_000);

  it("one instance: answering again within the bound of its restart after a SIGKILL", async () => {
    if (!s || !client) throw new Error("no stack");
    const a = s;
    const c = client;
    const prefix = uniquePrefix();
    await writeBalances(a, prefix);
    const [only] = startInstances(writeConfig(a, prefix), 1);
    await answeredWithin(c, a, 30_000).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${only.output().slice(-3000)}`);
    });
    const figures: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      await writeBalances(a, prefix);
      const before = only.restarts();
      only.signal("SIGKILL");
      await only.respawned(before);
      const restartedAtMs = Date.now();
      await answeredWithin(c, a, 15_000).catch((err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${only.output().slice(-3000)}`);
      });
      figures.push(Date.now() - restartedAtMs);
    }
    process.stdout.write(
      `auction restart → answering: ${figures.join(", ")} ms (bound ${RESTART_ANSWER_BOUND_MS} ms)\n`,
    );
    expect(Math.max(...figures)).toBeLessThanOrEqual(RESTART_ANSWER_BOUND_MS);
  }, 120_000);
});
