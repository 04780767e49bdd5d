import { randomUUID } from "node:crypto";
import { Wallet } from "ethers";
import type { AuthServer } from "../../services/messaging-auth/app";
import { serveClaimed } from "../../services/auction/claimed-delivery";
import type { ClaimedDelivery, ClaimedHandler } from "../../services/auction/delivery/types";
import { createRequestClaims, type RequestClaims } from "../../services/auction/request-claims";
import { connectMessaging, routerQueueGroup, type Messaging, type MessagingResponse } from "../../shared/messaging";
import { sleep } from "../../shared/timing";
import { createBidReservations, type ReserveParams } from "../../shared/transfers/bid-reservations";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { startAuthServer } from "../harness/auth-server";
import { captureLogs } from "../harness/logs";
import { startNats, type NatsServer } from "../harness/nats";
import { useRedis } from "../harness/redis";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";

/**
 * The auction's request claims (services/auction/request-claims.ts) and the reservation step fenced on them,
 * against a real Redis: one owner, takeovers only once the lease has run out, the fence refusing a stale owner,
 * and a takeover after the reservation re-sending the stored bid instead of reserving again. Then the delivery
 * (claimed-delivery.ts) over a real NATS: a settled request's notice ends every watch of it, so an owner that goes
 * silent after answering is not answered for again, while one silent before answering is.
 */
const ASSET = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const USER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
// Shortened (300 ms in production) so a lease runs out within the test; the logic does not depend on its length.
const LEASE_MS = 150;

const suite = useRedis();

describe("auction request claims (real Redis)", () => {
  let prefix: string;
  let claims: RequestClaims;
  const NOW = Date.now();

  beforeEach(async () => {
    prefix = uniquePrefix();
    claims = createRequestClaims(suite.redis, prefix, { leaseMs: LEASE_MS });
    const balances = createBalanceStore(suite.redis, prefix);
    await balances.setRouterBalance(1338, ASSET, 1000n, NOW);
    await balances.setGasBalance(1337, 100n, NOW);
    await balances.setGasBalance(1338, 100n, NOW);
  });

  const reserveParams = (claim: ReserveParams["claim"]): ReserveParams => ({
    sendingChainId: 1337,
    sendingAssetId: ASSET,
    receivingChainId: 1338,
    receivingAssetId: ASSET,
    transferKey: `0x${"ab".repeat(32)}-${USER}`.toLowerCase(),
    amount: 100n,
    nowMs: NOW,
    untilMs: NOW + 300_000,
    maxAgeMs: 60_000,
    rateLimitMs: 0,
    minGasSending: 10n,
    minGasReceiving: 10n,
    commit: true,
    claim,
  });

  const fence = (requestId: string, token: string, bidExpiry: number, gasFee: string): ReserveParams["claim"] => ({
    key: claims.key(requestId),
    token,
    bidExpiry,
    gasFee,
    leaseMs: LEASE_MS,
    keepMs: 30_000,
  });

  /** Waits until the lease (from Redis TIME) has run out: the check says so, as a watcher would see it. */
  const leaseRunsOut = async (requestId: string): Promise<void> => {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const raw = (await suite.redis.get(claims.key(requestId))) ?? "";
      const leaseUntil = Number(raw.split("|")[2]);
      const [sec, micro] = await suite.redis.time();
      if (Number(sec) * 1000 + Math.floor(Number(micro) / 1000) >= leaseUntil) return;
      if (Date.now() > deadline) throw new Error(`lease of ${raw} never ran out`);
      await sleep(20);
    }
  };

  it("gives a request to one claimant; a watcher sees it held; a value no script writes reads done, never taken over", async () => {
    expect(await claims.claim("r1", "a.1")).toBe(true);
    expect(await claims.claim("r1", "b.1")).toBe(false);
    expect(await claims.check([{ requestId: "r1", token: "b.2" }])).toEqual([{ status: "held" }]);
    await suite.redis.set(claims.key("r1"), "d", "KEEPTTL"); // unreadable: it must not be taken over
    expect(await claims.check([{ requestId: "r1", token: "b.3" }])).toEqual([{ status: "done" }]);
    expect(await claims.claim("r1", "b.4")).toBe(false);
  });

  it("a watcher takes over a claim whose lease ran out, and the stale owner's reservation is fenced off", async () => {
    const reservations = createBidReservations(suite.redis, prefix);
    expect(await claims.claim("r2", "a.1")).toBe(true);
    expect(await claims.renew([{ requestId: "r2", token: "a.1" }])).toEqual([true]);
    await leaseRunsOut("r2");
    expect(await claims.check([{ requestId: "r2", token: "b.1" }])).toEqual([{ status: "take" }]);
    // The old owner wakes up: it can neither renew, nor reserve, nor mark the request done.
    expect(await claims.renew([{ requestId: "r2", token: "a.1" }])).toEqual([false]);
    const stale = await reservations.reserve(reserveParams(fence("r2", "a.1", 1, "7")));
    expect(stale.code).toBe("ClaimLost");
    expect(await reservations.reservedTotal(1338, ASSET)).toBe(0n);
    const taker = await reservations.reserve(reserveParams(fence("r2", "b.1", 1, "7")));
    expect(taker.code).toBe("ok");
    expect(await suite.redis.get(claims.key("r2"))).toMatch(/^r\|b\.1\|/);
  });

  it("a takeover after the owner reserved re-sends the stored bid; the promise is not taken twice", async () => {
    const reservations = createBidReservations(suite.redis, prefix);
    expect(await claims.claim("r3", "a.1")).toBe(true);
    const reserved = await reservations.reserve(reserveParams(fence("r3", "a.1", 1_800_000_300, "12345")));
    expect(reserved.code).toBe("ok");
    // Reserved, never published (the owner died while signing): only the lease ends it.
    expect(await claims.check([{ requestId: "r3", token: "b.1" }])).toEqual([{ status: "held" }]);
    await leaseRunsOut("r3");
    expect(await claims.check([{ requestId: "r3", token: "b.1" }])).toEqual([
      { status: "resend", bid: { amountReceived: "100", bidExpiry: 1_800_000_300, gasFee: "12345" } },
    ]);
    // A second watcher finds it held by the taker, not up for grabs again.
    expect(await claims.check([{ requestId: "r3", token: "c.1" }])).toEqual([{ status: "held" }]);
    expect(await reservations.reservedTotal(1338, ASSET)).toBe(100n);
  });

  it("the owner's normal path: the reservation step creates the claim, in state r, its only claim write", async () => {
    const reservations = createBidReservations(suite.redis, prefix);
    expect((await reservations.reserve(reserveParams(fence("r5", "a.1", 1_800_000_300, "9")))).code).toBe("ok");
    expect(await suite.redis.get(claims.key("r5"))).toMatch(/^r\|a\.1\|[0-9]+\|100\|1800000300\|9$/);
    expect(await suite.redis.pttl(claims.key("r5"))).toBeGreaterThan(20_000);
    // Once reserved, not a second time under the same claim (a retry re-sends instead).
    expect((await reservations.reserve(reserveParams(fence("r5", "a.1", 1_800_000_300, "9")))).code).toBe("ClaimLost");
  });

  it("a request nobody claimed (its queue-group member died unread) is taken by exactly one watcher", async () => {
    const [first, second] = await Promise.all([
      claims.check([{ requestId: "r4", token: "b.1" }]),
      claims.check([{ requestId: "r4", token: "c.1" }]),
    ]);
    expect([first[0].status, second[0].status].sort()).toEqual(["held", "take"]);
    // The slow member reads it at last: its claim fails, so it does not answer too.
    expect(await claims.claim("r4", "a.1")).toBe(false);
  });
});

describe("claimed delivery: the settled notice (real NATS and Redis)", () => {
  let nats: NatsServer;
  let auth: AuthServer;
  const open: Messaging[] = [];
  const deliveries: ClaimedDelivery[] = [];

  beforeAll(async () => {
    [nats, auth] = await Promise.all([startNats(), startAuthServer()]);
  });

  afterAll(async () => {
    await Promise.all(deliveries.splice(0).map((d) => d.stop()));
    await Promise.all(open.splice(0).map((m) => m.close()));
    await auth?.close();
    await nats?.stop();
  });

  const walletSigner = () => {
    const wallet = Wallet.createRandom();
    return {
      address: wallet.address,
      getAddress: async () => wallet.address,
      signMessage: (m: string | Uint8Array) => wallet.signMessage(m),
    };
  };

  const connectAs = async (signer: ReturnType<typeof walletSigner>): Promise<Messaging> => {
    const messaging = await connectMessaging({
      servers: nats.url,
      authUrl: auth.url,
      signer,
      logger: captureLogs().logger,
    });
    open.push(messaging);
    return messaging;
  };

  it("an owner silent after answering or refusing is not answered for again; one silent before it is taken over", async () => {
    const prefix = uniquePrefix();
    const router = walletSigner();
    // What a request's owner does, by the request's `mode`; a second call for one request is a takeover.
    const calls = new Map<string, number>();
    const ownerClaims = new Map<string, { key: string; token: string }>();
    const handler =
      (messaging: Messaging): ClaimedHandler =>
      async (request, claim) => {
        const { mode } = request.data as { mode: string };
        const n = (calls.get(request.responseInbox) ?? 0) + 1;
        calls.set(request.responseInbox, n);
        if (n > 1) {
          messaging.respond(request, { by: "taker" });
          claim.published();
          return true;
        }
        if (mode === "refuse") return true; // a refusal before the reservation step writes nothing in Redis
        ownerClaims.set(request.responseInbox, { key: claim.key, token: claim.token });
        expect(await claim.hold()).toBe(true);
        if (mode === "answer-then-silent") {
          messaging.respond(request, { by: "owner" });
          claim.published();
        }
        // Silent from here on, as if killed: it neither settles nor renews its claim again.
        throw new Error("owner silenced");
      };
    for (let i = 0; i < 2; i += 1) {
      const messaging = await connectAs(router);
      deliveries.push(
        serveClaimed("auction", {
          messaging,
          queueGroup: routerQueueGroup(router.address),
          claims: createRequestClaims(suite.redis, prefix, { leaseMs: LEASE_MS }),
          logger: captureLogs().logger,
          handler: handler(messaging),
          leaseMs: LEASE_MS,
        }),
      );
    }
    const client = await connectAs(walletSigner());
    const responses: MessagingResponse[] = [];
    client.onResponse("auction", (r) => responses.push(r));
    const responsesTo = (inbox: string) => responses.filter((r) => r.responseInbox === inbox).map((r) => r.data);
    const answered = `_INBOX.${randomUUID()}`;
    const refused = `_INBOX.${randomUUID()}`;
    const silent = `_INBOX.${randomUUID()}`;
    client.request("auction", { mode: "answer-then-silent" }, answered);
    client.request("auction", { mode: "refuse" }, refused);
    const sentAtMs = Date.now();
    await waitFor("the first answer", () => responsesTo(answered)[0], 5_000);
    // The answered request's lease runs out (Redis time), and its watch (had it stood) falls due.
    const { key } = ownerClaims.get(answered) ?? { key: "" };
    await waitFor(
      "the answered request's lease run out",
      async () => {
        const leaseUntil = Number(((await suite.redis.get(key)) ?? "").split("|")[2]);
        const [sec, micro] = await suite.redis.time();
        const overdue = Number(sec) * 1000 + Math.floor(Number(micro) / 1000) >= leaseUntil;
        return (overdue && Date.now() > sentAtMs + LEASE_MS + 100) || undefined;
      },
      5_000,
    );
    // The event to wait for: a takeover of this one comes on a tick after the first ones were due (one event loop).
    client.request("auction", { mode: "silent" }, silent);
    expect(await waitFor("the takeover's answer", () => responsesTo(silent)[0], 5_000)).toEqual({ by: "taker" });
    await client.flush();
    expect(responsesTo(answered)).toEqual([{ by: "owner" }]);
    expect(calls.get(answered)).toBe(1);
    expect(await suite.redis.get(key)).toMatch(new RegExp(`^c\\|${ownerClaims.get(answered)?.token}\\|`)); // never taken
    expect(responsesTo(refused)).toEqual([]);
    expect(calls.get(refused)).toBe(1);
    expect(calls.get(silent)).toBe(2);
  }, 30_000);
});
