import { Wallet, getAddress, hexlify, parseEther, randomBytes } from "ethers";
import type { AuctionBid } from "../../shared/protocol/types";
import { transferKey } from "../../shared/queues";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import {
  UNPREPARED_SHARE_PERCENT,
  createBidReservations,
  type ReserveParams,
} from "../../shared/transfers/bid-reservations";
import {
  RECEIVING,
  SENDING,
  askFor,
  auctionConfig,
  sdkPayload,
  startAuctionStack,
  startClient,
  startInstance,
  writeBalances,
  type AuctionInstance,
  type AuctionStack,
  type Client,
} from "../integration/auction-fixture";
import { randomMnemonic } from "../harness/mnemonic";
import { uniquePrefix } from "../harness/prefix";

jest.setTimeout(180_000);

/**
 * "Anyone can get a chosen user's requests refused": the payload's `user` is anyone's to write, and the
 * SDK's messaging key is a throw-away, so nothing keyed on them may refuse a request. Through NATS and a real
 * auction process: a stranger naming the victim's address gets none of the victim's requests refused, and a user's
 * second quote (a new transactionId) is answered. Then the bound itself (docs/auction.md, "Promises"): whatever
 * others request, pin and let lapse, a request of at most half the free liquidity is never refused for liquidity.
 */
const LIQUIDITY = parseEther("100");
/** 10 tokens in: 9.215 out after the router fee and the gas fee (auction.test.ts), 9.2 % of LIQUIDITY. */
const NINE_PERCENT_IN = "10000000000000000000";
/** ≈ 50 % out: 50.8 × 0.9995 − 0.78 = 49.9946. */
const HALF_IN = "50800000000000000000";
/** ≈ 30 % out. */
const THIRTY_IN = "30800000000000000000";
/** A tiny request: 1 token in. */
const TINY_IN = "1000000000000000000";

describe("requests naming another user", () => {
  let s: AuctionStack;
  let stranger: Client;
  let victim: Client;
  let instance: AuctionInstance | undefined;
  let prefix: string;

  beforeAll(async () => {
    s = await startAuctionStack();
    [stranger, victim] = await Promise.all([startClient(s), startClient(s)]);
  });

  /** A fresh router with 100 tokens of liquidity and this `requestLimit`. */
  async function start(requestLimit: number): Promise<void> {
    prefix = uniquePrefix();
    await writeBalances(s, prefix, { liquidity: LIQUIDITY });
    instance = await startInstance({
      config: auctionConfig(s, { prefix, mnemonic: randomMnemonic(), requestLimit }),
    });
  }

  afterEach(async () => {
    await instance?.running.stop();
    instance = undefined;
  });

  afterAll(async () => {
    for (const c of [stranger, victim]) await c?.close();
    await s?.stop();
  });

  /** This router's bid for `data`, or its refusal code. */
  function ask(client: Client, data: Record<string, unknown>): Promise<AuctionBid | string> {
    if (!instance) throw new Error("no auction instance");
    return askFor(instance, client, data);
  }

  it("a stranger's request for half the liquidity in the victim's name does not refuse the victim's 9 %", async () => {
    // No rate limit here, so that only a per-requester cap could refuse (the next case covers the limit).
    await start(0);
    const user = Wallet.createRandom().address;
    expect(await ask(stranger, sdkPayload(s, { user, amount: HALF_IN }))).toMatchObject({ user });
    expect(await ask(victim, sdkPayload(s, { user, amount: NINE_PERCENT_IN }))).toMatchObject({
      user,
      amountReceived: "9215000000000000000",
    });
  });

  it("a stranger's tiny request in the victim's name does not rate-limit the victim", async () => {
    // 60 s, not the shipped 500 ms: a longer stamp is the stranger's best case, and the victim surely asks within it.
    await start(60_000);
    const user = Wallet.createRandom().address;
    expect(await ask(stranger, sdkPayload(s, { user, amount: TINY_IN }))).toMatchObject({ user });
    expect(await ask(victim, sdkPayload(s, { user, amount: NINE_PERCENT_IN }))).toMatchObject({ user });
  });

  it("a user's second quote, for a new transactionId, is answered", async () => {
    // Both limits in play: the shipped requestLimit and whatever caps the requester.
    await start(500);
    const user = Wallet.createRandom().address;
    const first = await ask(victim, sdkPayload(s, { user, amount: THIRTY_IN }));
    const second = await ask(victim, sdkPayload(s, { user, amount: THIRTY_IN }));
    expect(first).toMatchObject({ user });
    expect(second).toMatchObject({ user });
    expect((second as AuctionBid).transactionId).not.toBe((first as AuctionBid).transactionId);
  });
});

describe("the share no one else can take", () => {
  let s: AuctionStack;

  beforeAll(async () => {
    s = await startAuctionStack();
  });

  afterAll(async () => {
    await s?.stop();
  });

  it(`no request of at most ${UNPREPARED_SHARE_PERCENT} % of the free liquidity is refused because of others' requests`, async () => {
    // The auction's own atomic step, driven by random traffic of others: bids of any size in anyone's name (the
    // victim's included), re-requests of the same transfers, prepares (hard holds), releases and lapses.
    const prefix = uniquePrefix();
    const reservations = createBidReservations(s.redis, prefix);
    const balances = createBalanceStore(s.redis, prefix);
    const victimUser = getAddress(hexlify(randomBytes(20)));
    const users = [victimUser, ...Array.from({ length: 5 }, () => getAddress(hexlify(randomBytes(20))))];
    const transfers = Array.from({ length: 40 }, () =>
      transferKey(hexlify(randomBytes(32)), users[Math.floor(Math.random() * users.length)] as string),
    );
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;
    let nowMs = Date.now();
    const balance = 1_000_000n;
    const request = (key: string, amount: bigint, commit: boolean): ReserveParams => ({
      sendingChainId: SENDING,
      sendingAssetId: s.sendingToken,
      receivingChainId: RECEIVING,
      receivingAssetId: s.receivingToken,
      transferKey: key,
      amount,
      nowMs,
      untilMs: nowMs + 420_000,
      maxAgeMs: 60_000,
      rateLimitMs: 500,
      minGasSending: 0n,
      minGasReceiving: 0n,
      commit,
    });
    let checked = 0;
    let pressured = 0;
    for (let step = 0; step < 1500; step += 1) {
      nowMs += pick([0, 100, 1000, 30_000]);
      await balances.setRouterBalance(RECEIVING, s.receivingToken, balance, nowMs);
      await balances.setGasBalance(SENDING, 1n, nowMs);
      await balances.setGasBalance(RECEIVING, 1n, nowMs);
      const key = pick(transfers);
      const op = pick(["bid", "bid", "bid", "pin", "release"]);
      if (op === "bid") {
        const amount = BigInt(1 + Math.floor(Math.random() * Number(balance) * 1.2));
        await reservations.reserve(request(key, amount, true));
      } else if (op === "pin") {
        await reservations.pin(
          RECEIVING,
          s.receivingToken,
          key,
          nowMs + 3_600_000,
          BigInt(Math.floor(Math.random() * 50_000)),
        );
      } else {
        await reservations.release(RECEIVING, s.receivingToken, key);
      }
      // The victim, at any moment, with a fresh transfer of its own (a new quote): up to half the free liquidity.
      const { total, hard } = await reservations.promises(RECEIVING, s.receivingToken);
      const free = balance > hard ? balance - hard : 0n;
      if (free === 0n) continue;
      // Others' unprepared promises fill their whole share: the victim is checked under the worst pressure.
      if (total - hard >= free / 2n) pressured += 1;
      const amount = free - free / 2n; // 50 % of free, rounded up: the largest the rule guarantees
      const victim = await reservations.reserve(
        request(transferKey(hexlify(randomBytes(32)), victimUser), amount, false),
      );
      expect(victim).toMatchObject({ code: "ok" });
      checked += 1;
    }
    // The traffic did fill the other half, most of the time: the victim was checked against real pressure.
    expect(checked).toBeGreaterThan(1000);
    expect(pressured).toBeGreaterThan(checked / 4);
  });
});
