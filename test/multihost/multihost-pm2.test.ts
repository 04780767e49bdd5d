import { existsSync } from "node:fs";
import { Wallet, getAddress, parseEther } from "ethers";
import { AMOUNT, RECEIVING, SENDING } from "../e2e/e2e-fixture";
import { routerLiquidity, tokenBalance, transferEvents, userFulfill, waitForEvent } from "../e2e/e2e-user";
import { runSdkSwap, type SdkSwapParams, type SdkSwapResult } from "../e2e/run-sdk-swap";
import { SDK_MODULES } from "../e2e/sdk-fixture";
import { describeAudit, fundUsers } from "../fault/swap-audit";
import { mintToken } from "../harness/deploy";
import type { StackChain } from "../harness/stack";
import { startSubgraphServer, type SubgraphServer } from "../harness/subgraph-server";
import { PM2_ROLES, chainLines, pm2AppOf, pm2AppsOf, startBed, type Bed } from "./bed";
import {
  SWAP_STEP_MS,
  auditBed,
  connectBedClient,
  expectCleanAudit,
  expectEachSwapOnce,
  userPrepares,
  withOutputs,
  type BidAnswer,
  type BedClient,
} from "./bed-client";
import { cleanupBeds, heal, killIn, netnsUnavailable, partition } from "./netns";
import type { Pm2Host } from "./pm2-host";
import { waitFor } from "../harness/wait";

/**
 * As an operator deploys it: the bed of multihost.test.ts, but each router host runs
 * `pm2 start ecosystem.config.js` (the project's pm2, a PM2_HOME of its own) with its ROUTER_ROLES:
 * a "admin,auction,submitter,poller", b "auction,submitter,poller" (b's submitters and pollers are the
 * standbys: a holds the leases first). The real @connext/nxtp-sdk swaps through it from the test process, and
 * faults are injected inside the bed's namespaces; every case judges what reached the chains.
 * Needs root (ip netns add); without it the suite is skipped with one line saying why.
 */
/**
 * As multihost.test.ts: once this much has passed (set-up included), each remaining case fails at once instead
 * of starting; with the longest case timeout (100 s) and the teardown the file stays within about 300 s. A normal
 * run takes 90-100 s on a 2-core machine.
 */
const SUITE_BUDGET_MS = 165_000;
/** The send lease's 1 s TTL (shipped default) plus the standby's next poll; as multihost.test.ts. */
const TAKEOVER_BOUND_MS = 5_000;
/** The poller lease's shipped TTL (POLLER_LEASE_TTL_MS, 3 s) plus a standby's next attempt. */
const POLLER_TAKEOVER_BOUND_MS = 8_000;
/** What the user offers the router for relaying; above its estimate (native and TEST share one oracle price). */
const RELAYER_FEE = parseEther("0.001");
/** The SDK's refused non-loopback calls that are expected (its subgraph health check and Gelato), as sdk.test.ts. */
const EXPECTED_BLOCKED =
  /^axios https:\/\/(subgraph-ts-worker\.connext\.workers\.dev\/subgraph_health\/|relay\.gelato\.digital\/relays\/)$/;
const SDK_SWAP_TIMEOUT_MS = 40_000;

const unavailable = netnsUnavailable();
if (unavailable) process.stdout.write(`multihost (PM2): skipped: ${unavailable}\n`);
const describeBed = unavailable ? describe.skip : describe;

describeBed("multi-host bed under PM2 (ROUTER_ROLES per host)", () => {
  let bed: Bed | undefined;
  let client: BedClient | undefined;
  const subgraphs = new Map<number, SubgraphServer>();
  let startBlocks: Record<number, number> = {};

  const suiteStartedAtMs = Date.now();

  beforeEach(() => {
    if (Date.now() - suiteStartedAtMs > SUITE_BUDGET_MS) {
      throw new Error(`the PM2 multi-host suite spent its ${SUITE_BUDGET_MS / 1000} s budget: case not started`);
    }
  });

  beforeAll(async () => {
    if (!existsSync(SDK_MODULES)) {
      throw new Error("test/sdk/node_modules is missing: run scripts/install-sdk-test-deps.sh (npm test does it)");
    }
    cleanupBeds(); // stale beds of killed runs (their creator's pid is gone); ours are named by our pid
    bed = await startBed({ router: "pm2" });
    const b = bed;
    // The SDK's subgraphs: the test harness's stand-in, in the test process, reading the chains through the door.
    for (const ch of [b.s.sending, b.s.receiving]) {
      subgraphs.set(
        ch.chainId,
        await startSubgraphServer({
          rpcUrl: ch.anvil.url,
          chainId: ch.chainId,
          transactionManager: ch.deployment.transactionManager,
        }),
      );
    }
    client = await connectBedClient(b);
    const c = client;
    await waitFor(
      "both auction hosts started and a bid answered",
      async () => {
        const started = ["a", "b"].every((h) => pm2Of(b, h).output("auction").includes('"auction started"'));
        const reply = started ? await c.requestBid(Wallet.createRandom().address, 2_000).catch(() => undefined) : 0;
        return reply ? true : undefined;
      },
      60_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${b.outputs()}`);
    });
    startBlocks = {
      [SENDING]: await b.s.sending.provider.getBlockNumber(),
      [RECEIVING]: await b.s.receiving.provider.getBlockNumber(),
    };
    process.stdout.write(`multihost (PM2): bed up in ${Date.now() - suiteStartedAtMs} ms\n`);
  }, 150_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await Promise.allSettled([...subgraphs.values()].map((s) => s.stop()));
    await bed?.stop();
  }, 60_000);

  const pm2Of = (b: Bed, host: string): Pm2Host =>
    b.pm2.get(host) ??
    (() => {
      throw new Error(`no PM2 on ${host}`);
    })();
  const audits = (b: Bed): ReturnType<typeof auditBed> => auditBed(b, startBlocks);

  /** `app`'s log lines on `host` from char `from` on whose message starts with one of `messages`. */
  const linesOf = (b: Bed, host: string, app: string, messages: RegExp, from = 0): string[] =>
    pm2Of(b, host)
      .output(app)
      .slice(from)
      .split("\n")
      .filter((l) => new RegExp(`"message":"(${messages.source})`).test(l));

  /** The host whose `role` of `chainId` holds its lease: the last lease line of the app's current pid says so. */
  const leaseHost = async (b: Bed, role: "submitter" | "poller", chainId: number): Promise<string | undefined> => {
    const prefix = role === "submitter" ? "sender" : "poller";
    for (const h of ["a", "b"]) {
      const app = pm2AppOf(role, chainId);
      const { pid } = await pm2Of(b, h).app(app);
      const lines = linesOf(b, h, app, new RegExp(`${prefix} (lease acquired|lease lost|term ended)`)).filter(
        // The one poller process's lines are both chains': this chain's only.
        (l) => l.includes(`"pid":${pid},`) && (role === "submitter" || chainLines(l, chainId) !== ""),
      );
      if (lines.length > 0 && lines[lines.length - 1].includes(`${prefix} lease acquired`)) return h;
    }
    return undefined;
  };

  /** PM2's restart count of every app on both hosts. */
  const restartCounts = async (b: Bed): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const h of ["a", "b"]) {
      for (const app of await pm2Of(b, h).jlist()) out[`${app.name}@${h}`] = app.pm2_env.restart_time;
    }
    return out;
  };

  /** A fresh SDK user: native gas on both chains, TEST on the sending chain. */
  const sdkUser = async (b: Bed): Promise<Wallet> => {
    const user = Wallet.createRandom();
    for (const ch of [b.s.sending, b.s.receiving]) await ch.anvil.setBalance(user.address, parseEther("10"));
    await mintToken(b.s.sending.deployment, user.address, AMOUNT * 2n);
    return new Wallet(user.privateKey);
  };

  const sdkParams = (b: Bed, user: Wallet): SdkSwapParams => {
    const chain = (ch: StackChain): SdkSwapParams["chains"][number] => ({
      rpcUrl: ch.anvil.url,
      transactionManager: ch.deployment.transactionManager,
      subgraph: subgraphs.get(ch.chainId)?.url ?? "",
    });
    return {
      mode: "relayed",
      relayerFee: RELAYER_FEE.toString(),
      natsUrl: b.natsUrl,
      authUrl: b.authUrl,
      sendingChainId: SENDING,
      receivingChainId: RECEIVING,
      sendingAssetId: b.s.sending.deployment.token,
      receivingAssetId: b.s.receiving.deployment.token,
      amount: AMOUNT.toString(),
      chains: { [SENDING]: chain(b.s.sending), [RECEIVING]: chain(b.s.receiving) },
      userPrivateKey: user.privateKey,
      stepTimeoutMs: 15_000,
    };
  };

  it("pm2 runs on each host exactly the apps of its ROUTER_ROLES", async () => {
    const b = bed as Bed;
    for (const [h, roles] of Object.entries(PM2_ROLES)) {
      const apps = (await pm2Of(b, h).jlist()).map((x) => ({ name: x.name, status: x.pm2_env.status }));
      expect(apps.sort((x, y) => x.name.localeCompare(y.name))).toEqual(
        pm2AppsOf(roles).map((name) => ({ name, status: "online" })),
      );
    }
  });

  it("the real SDK swaps with a relayed fulfill; each request answered once across both auction hosts", async () => {
    const b = bed as Bed;
    const users = [await sdkUser(b), await sdkUser(b)];
    const before = {
      users: await Promise.all(users.map((u) => tokenBalance(b.s.receiving, u.address))),
      liquiditySending: await routerLiquidity(b.s, b.s.sending),
      liquidityReceiving: await routerLiquidity(b.s, b.s.receiving),
      signerReceiving: await tokenBalance(b.s.receiving, b.s.router),
    };
    const results: SdkSwapResult[] = [];
    for (const u of users) {
      results.push(await withOutputs(b, () => runSdkSwap(sdkParams(b, u), SDK_SWAP_TIMEOUT_MS)));
    }
    for (const [i, r] of results.entries()) {
      process.stdout.write(
        `multihost (PM2) sdk relayed swap ${i + 1}: ${r.totalMs} ms (quote ${r.quote.ms}, receiver prepared ${r.receiverPrepared.ms}, fulfilled ${r.fulfilled.ms}), refused calls ${JSON.stringify(r.blocked)}\n`,
      );
      for (const target of Object.keys(r.blocked)) expect(target).toMatch(EXPECTED_BLOCKED);
      expect(r.connected.signedIn).toBe(true); // at the router's messaging-auth on host a
      expect(getAddress(r.quote.bid.router)).toBe(b.s.router);
      // Relayed: the router sent the user's fulfill, for the fee the user offered.
      expect(getAddress(r.fulfilled.sender ?? "")).toBe(b.s.router);
      expect(r.fulfilled.relayerFee).toBe(RELAYER_FEE.toString());
      await withOutputs(b, () =>
        waitFor(
          "the router's claim on 1337",
          async () => (await transferEvents(b.s.sending, "fulfilled", r.quote.bid.transactionId))[0],
          SWAP_STEP_MS,
        ),
      );
    }
    // On chain, to the wei: each user got the bid's amountReceived less the relayer fee, which the router's
    // signer (the relayer) got; the router's liquidity moved by exactly those swaps.
    const received = results.map((r) => BigInt(r.quote.bid.amountReceived));
    const after = await Promise.all(users.map((u) => tokenBalance(b.s.receiving, u.address)));
    expect(after.map((x, i) => x - before.users[i])).toEqual(received.map((x) => x - RELAYER_FEE));
    expect((await routerLiquidity(b.s, b.s.sending)) - before.liquiditySending).toBe(AMOUNT * BigInt(users.length));
    expect(before.liquidityReceiving - (await routerLiquidity(b.s, b.s.receiving))).toBe(
      received.reduce((sum, x) => sum + x, 0n),
    );
    expect((await tokenBalance(b.s.receiving, b.s.router)) - before.signerReceiving).toBe(
      RELAYER_FEE * BigInt(users.length),
    );
    // More requests, as the SDK sends them: NATS's queue group spreads them over both auction hosts.
    const extra: BidAnswer[] = [];
    for (let i = 0; i < 20; i += 1) extra.push(await (client as BedClient).requestBid(Wallet.createRandom().address));
    // Each request answered by exactly one auction host (their outcome lines, both hosts' PM2 logs), and once on
    // the wire.
    const ids = [...results.map((r) => r.quote.bid.transactionId), ...extra.map((x) => x.transactionId)];
    const answeredBy = (h: string): string[] => linesOf(b, h, "auction", /auction answered/);
    const answers = (id: string): number =>
      [...answeredBy("a"), ...answeredBy("b")].filter((l) => l.includes(`"transactionId":"${id}"`)).length;
    await waitFor("every request's outcome line", async () => (ids.every((id) => answers(id) > 0) ? true : undefined));
    process.stdout.write(
      `multihost (PM2): bids answered by a ${answeredBy("a").length}, by b ${answeredBy("b").length}\n`,
    );
    expect(ids.map(answers)).toEqual(ids.map(() => 1));
    const wire = (client as BedClient).responses;
    expect(extra.map((x) => wire.filter((r) => r.responseInbox === x.inbox).length)).toEqual(extra.map(() => 1));
    expect(answeredBy("a").length).toBeGreaterThan(0);
    expect(answeredBy("b").length).toBeGreaterThan(0);
    const all = await audits(b);
    process.stdout.write(`${all.map(describeAudit).join("\n")}\n`);
    expectCleanAudit(all);
    for (const r of results) {
      const id = r.quote.bid.transactionId;
      // The router's prepare and its relayed fulfill on 1338, its claim on 1337: one each.
      expect(all[1].txs.filter((x) => x.transactionId === id).map((x) => x.method)).toEqual(["prepare", "fulfill"]);
      expect(all[0].txs.filter((x) => x.transactionId === id).map((x) => x.method)).toEqual(["fulfill"]);
    }
  }, 100_000);

  it("the host whose submitter holds a job partitioned from Redis: the other takes over the send and poller leases", async () => {
    const b = bed as Bed;
    const c0 = client as BedClient;
    const [c, d] = ["c", "d"].map((n) => b.host(n));
    const receiving = b.s.receiving;
    const sub = `submitter-${RECEIVING}`;
    // The one poller process of both chains (the shipped default): its lines of the receiving chain are the ones
    // looked at, as the poller-1338 app's were; a partition takes the process's other lease with it too.
    const poller = "poller";
    const receivingLinesOf = (host: string, messages: RegExp, from: number): string[] =>
      linesOf(b, host, poller, messages, from).filter((l) => chainLines(l, RECEIVING) !== "");
    const [u] = await fundUsers(b.s, 1, 1);
    const { reply } = await c0.requestBid(u.user.address);
    // The receiving chain stops mining: the prepare stays pending, so its sender holds the job when the
    // partition starts.
    await receiving.anvil.setAutomine(false);
    const from = (app: string): Record<string, number> =>
      Object.fromEntries(["a", "b"].map((h) => [h, pm2Of(b, h).output(app).length]));
    const subFrom = from(sub);
    const pollerFrom = from(poller);
    let partitioned: { x: string; healed: boolean } | undefined;
    try {
      const t = await userPrepares(u, reply);
      // x: the host that broadcast the router's prepare (a, unless the lease moved since the bed started); y: the other.
      const x = await withOutputs(b, () =>
        waitFor("a submitter to broadcast the receiving prepare", async () =>
          ["a", "b"].find((h) => linesOf(b, h, sub, /transaction broadcast/, subFrom[h]).length > 0),
        ),
      );
      const y = x === "a" ? "b" : "a";
      const pollerOnX = (await leaseHost(b, "poller", RECEIVING)) === x;
      const hx = b.host(x);
      partition(hx, [c, d]);
      partitioned = { x, healed: false };
      const partitionedAtMs = Date.now();
      const since = (found: boolean): number | undefined => (found ? Date.now() - partitionedAtMs : undefined);
      const [takeoverMs, pollerTakeoverMs] = await withOutputs(b, () =>
        Promise.all([
          waitFor(
            `${y}'s submitter to resume the job`,
            async () => since(linesOf(b, y, sub, /resuming the job's persisted transaction/, subFrom[y]).length > 0),
            30_000,
          ),
          pollerOnX
            ? waitFor(
                `${y}'s poller to take the poller lease`,
                async () => since(receivingLinesOf(y, /poller lease acquired/, pollerFrom[y]).length > 0),
                30_000,
              )
            : Promise.resolve(undefined),
        ]),
      );
      process.stdout.write(
        `multihost (PM2) partition of ${x}: ${y} resumed the job ${takeoverMs} ms after ${x} lost Redis; ` +
          (pollerOnX ? `${y} took the poller lease after ${pollerTakeoverMs} ms\n` : `the poller lease was on ${y}\n`),
      );
      const xAtTakeover = pm2Of(b, x).output(sub).length;
      const xPollerAtTakeover = pm2Of(b, x).output(poller).length;
      await receiving.anvil.setAutomine(true);
      await receiving.anvil.mine(1);
      const receiver = await waitForEvent(receiving, "prepared", t.transactionId, SWAP_STEP_MS);
      heal(hx, [c, d]);
      partitioned.healed = true;
      // x is back: it learns it lost its leases (its next renewals) before anything else of its own happens.
      await withOutputs(b, () =>
        waitFor(
          `${x}'s submitter${pollerOnX ? " and poller" : ""} to see the leases gone`,
          async () =>
            linesOf(b, x, sub, /sender (lease lost|term ended)/, subFrom[x]).length > 0 &&
            (!pollerOnX || receivingLinesOf(x, /poller (lease lost|term ended)/, pollerFrom[x]).length > 0)
              ? true
              : undefined,
          30_000,
        ),
      );
      await userFulfill(u, receiver.txData);
      await waitForEvent(u.sending, "fulfilled", t.transactionId, SWAP_STEP_MS);
      // One more whole swap after the heal: both hosts' processes are past the partition when we count.
      const [next] = await fundUsers(b.s, 1, 1);
      await withOutputs(b, () => c0.swap(next));
      const all = await audits(b);
      process.stdout.write(`${all.map(describeAudit).join("\n")}\n`);
      expectCleanAudit(all);
      expect(all[1].txs.filter((x) => x.transactionId === t.transactionId)).toHaveLength(1);
      expect(linesOf(b, x, sub, /transaction broadcast|fee bumped/, xAtTakeover)).toEqual([]);
      // Nor does x's poller, whose lease moved: no job enqueued by it from the takeover on (its cursor and record
      // writes are fenced by the same term: test/integration/poller-lease.test.ts).
      if (pollerOnX) expect(receivingLinesOf(x, /job enqueued/, xPollerAtTakeover)).toEqual([]);
      expect(takeoverMs).toBeLessThanOrEqual(TAKEOVER_BOUND_MS);
      if (pollerOnX) expect(pollerTakeoverMs).toBeLessThanOrEqual(POLLER_TAKEOVER_BOUND_MS);
    } finally {
      if (partitioned && !partitioned.healed) heal(b.host(partitioned.x), [c, d]);
      await receiving.anvil.setAutomine(true);
    }
  }, 90_000);

  it("Redis primary SIGKILLed on host c mid-swap: the PM2 apps reconnect by themselves, every swap completes once", async () => {
    const b = bed as Bed;
    const c0 = client as BedClient;
    const users = await fundUsers(b.s, 2, 1);
    const c = b.host("c");
    const oldPrimary = await b.primaryAddr();
    expect(oldPrimary).toBe(c.addr);
    // PM2's counts first (pm2 jlist takes a while): the kill must follow the users' prepares at once.
    const restartsBefore = await restartCounts(b);
    const outputsBefore = new Map(
      ["a", "b"].flatMap((h) =>
        pm2AppsOf(PM2_ROLES[h as "a" | "b"]).map((app) => [`${app}@${h}`, pm2Of(b, h).output(app).length]),
      ),
    );
    const bids = await withOutputs(b, () => Promise.all(users.map((u) => c0.requestBid(u.user.address))));
    const nonces = async (): Promise<number> =>
      (await b.s.sending.provider.getTransactionCount(b.s.router)) +
      (await b.s.receiving.provider.getTransactionCount(b.s.router));
    const prepared = await Promise.all(users.map((u, i) => userPrepares(u, bids[i].reply)));
    const noncesAtKill = await nonces();
    const killedAtMs = Date.now();
    killIn(c, b.servers.get("redis-primary")?.pid ?? -1);
    // The swaps go on meanwhile: if the router's prepares were mined before the kill, its next transaction is a
    // claim, which needs the users' fulfills.
    const nextTx = withOutputs(b, () =>
      waitFor(
        "the next confirmed router transaction",
        async () => ((await nonces()) > noncesAtKill ? Date.now() - killedAtMs : undefined),
        30_000,
      ),
    );
    nextTx.catch(() => undefined); // awaited below
    await withOutputs(b, async () => {
      for (const [i, u] of users.entries()) {
        const receiver = await waitForEvent(u.receiving, "prepared", prepared[i].transactionId, SWAP_STEP_MS);
        await userFulfill(u, receiver.txData);
        await waitForEvent(u.sending, "fulfilled", prepared[i].transactionId, SWAP_STEP_MS);
      }
      // A swap begun after the failover: the auctions reconnected too.
      await c0.swap((await fundUsers(b.s, 1, 1))[0]);
    });
    const firstTxMs = await nextTx;
    expect(await b.primaryAddr()).toBe(b.host("d").addr);
    const restartsAfter = await restartCounts(b);
    const restarted = Object.keys(restartsAfter).filter((k) => restartsAfter[k] !== restartsBefore[k]);
    process.stdout.write(
      `multihost (PM2) redis kill: ${firstTxMs / 1000} s from the kill to the next confirmed router transaction; PM2 restarted ${restarted.join(", ") || "nothing"}\n`,
    );
    // Reconnected by themselves: no process exits, not even a submitter whose lease moved while Redis failed over
    // (its sender term ends once Redis is back, services/submitter/lease/job-runs.ts).
    const stuckLines = restarted.map((name) => {
      const [app, h] = name.split("@");
      return { name, stuck: pm2Of(b, h).output(app).slice(outputsBefore.get(name)).includes("sender term stuck") };
    });
    expect(stuckLines).toEqual([]);
    expectEachSwapOnce(
      await audits(b),
      prepared.map((x) => x.transactionId),
    );
  }, 90_000);
});
