import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ZeroAddress } from "ethers";
import { sleep } from "../../shared/timing";
import {
  MIN_GAS,
  RECEIVING,
  SENDING,
  randomMnemonic,
  sdkPayload,
  startAuctionStack,
  startClient,
  writeBalances,
  type AuctionStack,
  type Client,
} from "../integration/auction-fixture";
import { uniquePrefix, waitFor } from "../integration/submitter-fixture";
import { DIST, assertDistBuilt, supervise, type Supervised } from "./router-procs";

/**
 * Issue 12 §3: auction instances as real processes (dist/services/auction/main.js), restarted 250 ms after
 * they die as PM2 with ecosystem.config.js does. With two instances in the signer's queue group a SIGKILLed
 * one costs no request; a lone instance answers again within 2 s of its restart.
 */
const REQUESTS = 40;
const REQUEST_GAP_MS = 50;
const RESTART_ANSWER_BOUND_MS = 2_000;

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
  const writeConfig = (a: AuctionStack, prefix: string): string => {
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
      logLevel: "info",
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

  it("two instances: SIGKILL one mid-stream of requests, every request after the kill is answered, none twice", async () => {
    if (!s || !client) throw new Error("no stack");
    const a = s;
    const c = client;
    const prefix = uniquePrefix();
    await writeBalances(a, prefix);
    const [first, second] = startInstances(writeConfig(a, prefix), 2);
    const outputs = (): string =>
      [first, second].map((p) => `--- ${p.name} ---\n${p.output().slice(-3000)}`).join("\n");
    // Both serve: each has answered (the queue group spreads requests, so a few rounds reach both).
    await waitFor(
      "both instances serving",
      async () => {
        await writeBalances(a, prefix);
        await answeredWithin(c, a, 30_000);
        return /"auction started"/.test(first.output()) && /"auction started"/.test(second.output()) ? true : undefined;
      },
      40_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${outputs()}`);
    });
    const inboxes: string[] = [];
    for (let i = 0; i < REQUESTS; i += 1) {
      inboxes.push(c.request(sdkPayload(a)));
      if (i === REQUESTS / 4) first.signal("SIGKILL");
      await sleep(REQUEST_GAP_MS);
    }
    // A later request answered proves the earlier answers had time to arrive (one NATS connection, in order).
    await c.responseTo(c.request(sdkPayload(a)), 10_000);
    await c.messaging.flush();
    const counts = inboxes.map((inbox) => c.responsesTo(inbox).length);
    const unanswered = counts.flatMap((n, i) => (n === 0 ? [i] : []));
    const twice = counts.flatMap((n, i) => (n > 1 ? [i] : []));
    process.stdout.write(
      `auction kill: ${REQUESTS} requests, ${REQUESTS - unanswered.length} answered, unanswered #${unanswered.join(",") || "none"}, answered twice #${twice.join(",") || "none"}\n`,
    );
    // Core NATS delivers a queue-group message at most once: the request published right before the SIGKILL may
    // already sit in the killed process (docs/auction.md, "Instances and failures"). Every later request must
    // reach the live instance, and none may be answered twice.
    const lostInFlight = REQUESTS / 4;
    expect({ unanswered: unanswered.filter((i) => i !== lostInFlight), twice }).toEqual({ unanswered: [], twice: [] });
    expect(first.restarts()).toBeGreaterThanOrEqual(1); // the kill did land
  }, 90_000);

  it("one instance: answering again within 2 s of its restart after a SIGKILL", async () => {
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
