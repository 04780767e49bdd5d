import { Wallet, getAddress, hexlify, parseEther, randomBytes } from "ethers";
import { connect, type NatsConnection } from "nats";
import { encodeBid, recoverBidSigner } from "../../shared/protocol/bid";
import type { AuctionBid } from "../../shared/protocol/types";
import { createBidReservations, type BidReservations } from "../../shared/transfers/bid-reservations";
import { cleanUpModeKey } from "../../shared/coordination/keys";
import { DEFAULT_WARM_UP_ROUNDS } from "../../services/auction/bid/warm-up";
import type { BalanceStore } from "../../shared/transfers/balance-store";
import {
  MIN_GAS,
  RECEIVING,
  SENDING,
  auctionConfig,
  sdkPayload,
  startAuctionStack,
  startClient,
  startInstance,
  writeBalances,
  type AuctionInstance,
  type AuctionStack,
  type Client,
} from "./auction-fixture";
import { waitFor } from "../harness/wait";
import { randomMnemonic } from "../harness/mnemonic";
import { uniquePrefix } from "../harness/prefix";

jest.setTimeout(120_000);

const BID_FIELDS = [
  "user",
  "router",
  "initiator",
  "sendingChainId",
  "sendingAssetId",
  "amount",
  "receivingChainId",
  "receivingAssetId",
  "amountReceived",
  "receivingAddress",
  "transactionId",
  "expiry",
  "callDataHash",
  "callTo",
  "encryptedCallData",
  "sendingChainTxManagerAddress",
  "receivingChainTxManagerAddress",
  "bidExpiry",
];
/** 10 gwei × (200 000 fulfill + 190 000 prepare) gas × 200 USD/ETH ÷ 1 USD/token, in 18 decimals. */
const EXPECTED_GAS_FEE = 780_000_000_000_000_000n;

let s: AuctionStack;
let client: Client;
let main: AuctionInstance;
let prefix: string;
let balances: BalanceStore;
let reservations: BidReservations;
const started: AuctionInstance[] = [];

beforeAll(async () => {
  s = await startAuctionStack();
  prefix = uniquePrefix();
  balances = await writeBalances(s, prefix);
  reservations = createBidReservations(s.redis, prefix);
  // The main instance connects to messaging itself, from config.messagingUrl and config.authUrl.
  main = await startInstance({ config: auctionConfig(s, { prefix, mnemonic: randomMnemonic() }) });
  started.push(main);
  client = await startClient(s);
});

afterAll(async () => {
  await client?.close();
  for (const instance of started) await instance.running.stop();
  await s?.stop();
});

beforeEach(async () => {
  // Fresh, as the pollers keep them (the auction refuses balances older than 60 s).
  await writeBalances(s, prefix);
});

/** The outcome line of `transactionId` in `instance`'s log (a positive signal that the request was handled). */
function outcomeOf(instance: AuctionInstance, transactionId: unknown): Promise<Record<string, unknown>> {
  return waitFor(`outcome of ${String(transactionId)}`, () =>
    instance.outcomes().find((l) => l.transactionId === transactionId),
  );
}

/**
 * Sends `data`, waits for the main instance's refusal line with `code`, then proves no bid went out: a valid
 * request sent afterwards gets its bid over the same connection, so a bid for `data` would have arrived first.
 */
async function expectRefused(
  data: Record<string, unknown>,
  code: string,
  before?: () => Promise<void>,
): Promise<Record<string, unknown>> {
  const inbox = client.request(data);
  const line = await outcomeOf(main, data.transactionId);
  expect(line).toMatchObject({ result: "refused", code });
  await before?.();
  const valid = sdkPayload(s);
  await client.responseTo(client.request(valid));
  expect(client.responsesTo(inbox)).toEqual([]);
  expect(main.outcomes().filter((l) => l.transactionId === data.transactionId)).toHaveLength(1);
  return line;
}

describe("auction: bids", () => {
  // Runs first: the start-up warm-up (handlers/auction.ts) prices and encodes synthetic bids of this very pool, and
  // runs each as a quote through the whole handler, the reservation script included.
  it("warms its hot path at start without reserving liquidity, stamping a rate limit or logging an outcome", async () => {
    await waitFor(
      "the warm-up's last slice",
      () => main.logs.find("auction.warm-up", "auction warm-up done").length > 0,
    );
    // This stack's Redis ran the reservation script once per round (EVAL when EVALSHA found no script yet).
    const stats = String(await s.redis.info("commandstats"));
    const calls = (command: string): number =>
      Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    expect(calls("evalsha") + calls("eval")).toBeGreaterThanOrEqual(DEFAULT_WARM_UP_ROUNDS);
    expect(main.outcomes()).toEqual([]);
    expect(await reservations.reservedTotal(RECEIVING, s.receivingToken)).toBe(0n);
    expect(await reservations.reservedTotal(SENDING, s.sendingToken)).toBe(0n);
    expect(await s.redis.keys(`${prefix}:router:rate:*`)).toEqual([]);
    expect(await s.redis.keys(`${prefix}:router:auction-claim:*`)).toEqual([]);
  });

  it("answers the SDK's exact payload with a bid signed by the router signer, priced with chain 1's oracle", async () => {
    const payload = sdkPayload(s);
    const reservedBefore = await reservations.reservedTotal(RECEIVING, s.receivingToken);
    const nowSec = Math.floor(Date.now() / 1000);
    const response = await client.responseTo(client.request(payload));

    expect(response.responder).toBe(main.running.signerAddress);
    const data = response.data as { bid: AuctionBid; bidSignature: string; gasFeeInReceivingToken: string };
    expect(Object.keys(data)).toEqual(["bid", "bidSignature", "gasFeeInReceivingToken"]);
    expect(Object.keys(data.bid)).toEqual(BID_FIELDS);
    expect(data.gasFeeInReceivingToken).toBe(EXPECTED_GAS_FEE.toString());
    const afterRouterFee = (10n ** 19n * 9995n) / 10000n;
    expect(data.bid.amountReceived).toBe((afterRouterFee - EXPECTED_GAS_FEE).toString());
    for (const field of [
      "user",
      "initiator",
      "sendingChainId",
      "sendingAssetId",
      "amount",
      "receivingChainId",
      "receivingAssetId",
      "receivingAddress",
      "transactionId",
      "expiry",
      "callDataHash",
      "callTo",
      "encryptedCallData",
    ] as const) {
      expect(data.bid[field]).toBe(payload[field]);
    }
    expect(data.bid.router).toBe(main.running.signerAddress);
    expect(data.bid.sendingChainTxManagerAddress).toBe(
      getAddress(s.stack.chain(SENDING).deployment.transactionManager),
    );
    expect(data.bid.receivingChainTxManagerAddress).toBe(
      getAddress(s.stack.chain(RECEIVING).deployment.transactionManager),
    );
    expect(Math.abs(data.bid.bidExpiry - (nowSec + 300))).toBeLessThanOrEqual(2);
    expect(recoverBidSigner(encodeBid(data.bid), data.bidSignature)).toBe(main.running.signerAddress);
    expect(await reservations.reservedTotal(RECEIVING, s.receivingToken)).toBe(
      reservedBefore + BigInt(data.bid.amountReceived),
    );

    const line = await outcomeOf(main, payload.transactionId);
    expect(line).toMatchObject({
      result: "bid",
      code: "ok",
      user: payload.user,
      sendingChainId: SENDING,
      receivingChainId: RECEIVING,
    });
    expect(typeof line.durationMs).toBe("number");
  });

  it("quotes a dry run unsigned, without reserving liquidity or stamping the rate limit", async () => {
    const quote = { ...sdkPayload(s), dryRun: true };
    const reservedBefore = await reservations.reservedTotal(RECEIVING, s.receivingToken);
    const response = await client.responseTo(client.request(quote));
    const data = response.data as { bid: AuctionBid; bidSignature: string | null };
    expect(data.bidSignature).toBeNull();
    expect(await reservations.reservedTotal(RECEIVING, s.receivingToken)).toBe(reservedBefore);
    // The real request that follows a quote (same user and pair) still gets its bid.
    const real = { ...quote, dryRun: false, transactionId: hexlify(randomBytes(32)) };
    const bid = await client.responseTo(client.request(real));
    expect((bid.data as { bidSignature: string | null }).bidSignature).toMatch(/^0x[0-9a-f]{130}$/);
  });
});

describe("auction: refusals (logged with a code, never answered)", () => {
  it("refuses an expiry too close or too far (AuctionExpired, ExpiryOutOfWindow)", async () => {
    const nowSec = Math.floor(Date.now() / 1000);
    await expectRefused({ ...sdkPayload(s), expiry: nowSec + 100 }, "AuctionExpired");
    await expectRefused({ ...sdkPayload(s), expiry: nowSec + 2 * 86400 }, "ExpiryOutOfWindow");
    // A minute of slack: the auction's clock is a little later than the test's.
    await expectRefused({ ...sdkPayload(s), expiry: nowSec + 8 * 86400 + 60 }, "ExpiryOutOfWindow");
  });

  it("refuses a pair outside the swap pools (SwapInvalid) and an unknown chain (ProvidersNotAvailable)", async () => {
    await expectRefused({ ...sdkPayload(s), receivingAssetId: Wallet.createRandom().address }, "SwapInvalid");
    await expectRefused({ ...sdkPayload(s), sendingChainId: 999 }, "ProvidersNotAvailable");
  });

  it("refuses zero, fractional and out-of-range amounts and wrongly typed fields", async () => {
    await expectRefused(sdkPayload(s, { amount: "0" }), "ZeroValueBid");
    await expectRefused(sdkPayload(s, { amount: "1.5" }), "AmountInvalid");
    await expectRefused(sdkPayload(s, { amount: (1n << 256n).toString() }), "AmountInvalid");
    await expectRefused({ ...sdkPayload(s), amount: 5 }, "ParamsInvalid");
    await expectRefused({ ...sdkPayload(s), sendingChainId: "1337" }, "ParamsInvalid");
    await expectRefused({ ...sdkPayload(s), receivingAddress: "0x1234" }, "ParamsInvalid");
  });

  it("refuses a gas fee above the amount (NotEnoughAmount)", async () => {
    await expectRefused(sdkPayload(s, { amount: "700000000000000000" }), "NotEnoughAmount");
  });

  it("refuses once open bids have promised the balance (LiquidityUnavailable) and above the balance (NotEnoughLiquidity)", async () => {
    // Earlier cases' bids are withdrawn so the balance below is the whole story.
    for (const key of (await reservations.promises(RECEIVING, s.receivingToken)).byTransfer.keys()) {
      await reservations.release(RECEIVING, s.receivingToken, key);
    }
    // Room for one 10-token bid (9.215 received) but not two: the first bid's promise (over half of 15) blocks
    // the unprepared share, 7.5, and 9.215 does not fit in the other half (docs/auction.md, "Promises").
    await balances.setRouterBalance(RECEIVING, s.receivingToken, parseEther("15"));
    const first = await client.responseTo(client.request(sdkPayload(s)));
    expect((first.data as { bid: AuctionBid }).bid.amountReceived).toBe("9215000000000000000");
    const second = sdkPayload(s);
    client.request(second);
    expect(await outcomeOf(main, second.transactionId)).toMatchObject({ code: "LiquidityUnavailable" });
    // 5 tokens (4.2175 received) still fit in the other half: the positive signal.
    const small = sdkPayload(s, { amount: "5000000000000000000" });
    await client.responseTo(client.request(small));
    expect(
      client.responses.filter((r) => (r.data as { bid?: AuctionBid }).bid?.transactionId === second.transactionId),
    ).toEqual([]);

    await balances.setRouterBalance(RECEIVING, s.receivingToken, parseEther("1"));
    await expectRefused(sdkPayload(s), "NotEnoughLiquidity", () => writeBalances(s, prefix).then(() => undefined));
  });

  it("refuses when the signer's gas is low on the sending chain, then on the receiving chain (NotEnoughGas)", async () => {
    const restore = (): Promise<void> => writeBalances(s, prefix).then(() => undefined);
    await balances.setGasBalance(SENDING, MIN_GAS - 1n);
    await expectRefused(sdkPayload(s), "NotEnoughGas", restore);
    await balances.setGasBalance(RECEIVING, MIN_GAS - 1n);
    await expectRefused(sdkPayload(s), "NotEnoughGas", restore);
  });

  it("refuses a cold balance (StaleBalance) instead of bidding on it", async () => {
    await balances.setRouterBalance(RECEIVING, s.receivingToken, parseEther("1000000"), Date.now() - 61_000);
    await expectRefused(sdkPayload(s), "StaleBalance", () => writeBalances(s, prefix).then(() => undefined));
  });

  it("drops bad JSON and a 1 MB message, refuses hostile data, and keeps serving", async () => {
    const nc: NatsConnection = await connect({ servers: s.natsUrl });
    try {
      const me = Wallet.createRandom().address;
      const subject = `${me}.${me}.auction.request`;
      nc.publish(subject, "{not json");
      const huge = JSON.stringify({
        responseInbox: "_INBOX.huge",
        data: { ...sdkPayload(s), encryptedCallData: "0x" + "ab".repeat(499_000) },
        version: "0.0.1",
        error: null,
      });
      expect(huge.length).toBeGreaterThan(998_000);
      nc.publish(subject, huge);
      nc.publish(
        subject,
        JSON.stringify({ responseInbox: "_INBOX.x", data: "just text", version: "0.0.1", error: null }),
      );
      await nc.flush();
    } finally {
      await nc.close();
    }
    await waitFor("two dropped messages", () => (main.logs.find("messaging.drop").length >= 2 ? true : undefined));
    await waitFor("the ParamsInvalid refusal", () =>
      main.outcomes().find((l) => l.code === "ParamsInvalid" && l.transactionId === undefined),
    );
    await expectRefused({ ...sdkPayload(s), transactionId: "0x" + "zz".repeat(32) }, "ParamsInvalid");
  });
});

describe("auction: modes and several instances", () => {
  /** Proves an injected-messaging instance published nothing for `inbox`: what it sent has reached the client. */
  async function assertNothingFrom(instance: AuctionInstance, inbox: string): Promise<void> {
    await instance.messaging?.flush();
    await client.messaging.flush();
    expect(client.responsesTo(inbox).filter((r) => r.responder === instance.running.signerAddress)).toEqual([]);
  }

  it.each([
    ["cleanUpMode", { cleanUpMode: true }, "RouterInCleanUpMode"],
    ["diagnosticMode", { diagnosticMode: true }, "RouterInDiagnosticMode"],
  ])("refuses every auction in %s", async (_mode, flags, code) => {
    const modePrefix = uniquePrefix();
    await writeBalances(s, modePrefix);
    const instance = await startInstance({
      config: auctionConfig(s, { prefix: modePrefix, mnemonic: randomMnemonic(), ...flags }),
      injectMessaging: true,
    });
    started.push(instance);
    const payload = sdkPayload(s);
    const inbox = client.request(payload);
    expect(await outcomeOf(instance, payload.transactionId)).toMatchObject({ result: "refused", code });
    // The main router (another signer) bid on the same request: it was delivered.
    await waitFor("the main router's bid", () =>
      client.responsesTo(inbox).find((r) => r.responder === main.running.signerAddress),
    );
    await assertNothingFrom(instance, inbox);
    await instance.running.stop();
  });

  it("refuses every auction while npm run drain's clean-up switch is in Redis, and bids again once it is removed", async () => {
    const drainPrefix = uniquePrefix();
    await writeBalances(s, drainPrefix);
    const instance = await startInstance({
      config: auctionConfig(s, { prefix: drainPrefix, mnemonic: randomMnemonic() }),
      injectMessaging: true,
    });
    started.push(instance);
    // Switched on after the instance started: no restart, no config change.
    await s.redis.set(cleanUpModeKey(drainPrefix), JSON.stringify({ sinceMs: Date.now() }));
    const during = sdkPayload(s);
    const inbox = client.request(during);
    expect(await outcomeOf(instance, during.transactionId)).toMatchObject({
      result: "refused",
      code: "RouterInCleanUpMode",
    });
    await waitFor("the main router's bid", () =>
      client.responsesTo(inbox).find((r) => r.responder === main.running.signerAddress),
    );
    await assertNothingFrom(instance, inbox);
    expect(await createBidReservations(s.redis, drainPrefix).reservedTotal(RECEIVING, s.receivingToken)).toBe(0n);

    await s.redis.del(cleanUpModeKey(drainPrefix));
    const after = sdkPayload(s);
    client.request(after);
    expect(await outcomeOf(instance, after.transactionId)).toMatchObject({ result: "bid", code: "ok" });
    await instance.running.stop();
  });

  it("refuses with ValueCold while a price it needs cannot be read (no contract at the oracle address)", async () => {
    const coldPrefix = uniquePrefix();
    await writeBalances(s, coldPrefix);
    const config = auctionConfig(s, {
      prefix: coldPrefix,
      mnemonic: randomMnemonic(),
      oracle: Wallet.createRandom().address,
    });
    const instance = await startInstance({ config, injectMessaging: true, options: { warmupTimeoutMs: 2_000 } });
    started.push(instance);
    const payload = sdkPayload(s);
    const inbox = client.request(payload);
    expect(await outcomeOf(instance, payload.transactionId)).toMatchObject({ result: "refused", code: "ValueCold" });
    await assertNothingFrom(instance, inbox);
    expect(instance.logs.find("auction.refresh").length).toBeGreaterThan(0);
    await instance.running.stop();
  });

  it("enforces requestLimit across two instances of one router (AuctionRateExceeded)", async () => {
    const groupPrefix = uniquePrefix();
    await writeBalances(s, groupPrefix);
    const config = auctionConfig(s, { prefix: groupPrefix, mnemonic: randomMnemonic(), requestLimit: 60_000 });
    const first = await startInstance({ config, injectMessaging: true });
    started.push(first);
    const user = Wallet.createRandom().address;
    const r1 = sdkPayload(s, { user });
    const r1Inbox = client.request(r1);
    await waitFor("first instance's bid", () =>
      client.responsesTo(r1Inbox).find((r) => r.responder === first.running.signerAddress),
    );
    await first.running.stop();

    const second = await startInstance({ config, injectMessaging: true });
    started.push(second);
    // A re-request of the same transfer (the limit is per transfer, never per user: anyone may name any user).
    const r2 = { ...r1 };
    const inbox = client.request(r2);
    expect(await outcomeOf(second, r2.transactionId)).toMatchObject({ code: "AuctionRateExceeded" });
    await assertNothingFrom(second, inbox);
    // The same user's next transfer (a new quote draws a new transactionId) is not limited.
    const other = sdkPayload(s, { user });
    const otherInbox = client.request(other);
    await waitFor("second instance's bid", () =>
      client.responsesTo(otherInbox).find((r) => r.responder === second.running.signerAddress),
    );
    await second.running.stop();
  });

  it("two instances in one queue group answer each of N requests exactly once", async () => {
    const groupPrefix = uniquePrefix();
    await writeBalances(s, groupPrefix);
    const config = auctionConfig(s, { prefix: groupPrefix, mnemonic: randomMnemonic() });
    const a = await startInstance({ config, injectMessaging: true });
    const b = await startInstance({ config, injectMessaging: true });
    started.push(a, b);
    const signer = a.running.signerAddress;
    expect(b.running.queueGroup).toBe(a.running.queueGroup);
    const payloads = Array.from({ length: 24 }, () => sdkPayload(s));
    const inboxes = payloads.map((p) => client.request(p));
    const ours = (inbox: string): unknown[] => client.responsesTo(inbox).filter((r) => r.responder === signer);
    await waitFor("every bid", () => (inboxes.every((i) => ours(i).length >= 1) ? true : undefined));
    await a.messaging?.flush();
    await b.messaging?.flush();
    await client.messaging.flush();
    for (const inbox of inboxes) expect(ours(inbox)).toHaveLength(1);
    const answeredBy = (instance: AuctionInstance): number =>
      instance.outcomes().filter((l) => l.result === "bid").length;
    expect(answeredBy(a) + answeredBy(b)).toBe(payloads.length);
    expect(answeredBy(a)).toBeGreaterThan(0);
    expect(answeredBy(b)).toBeGreaterThan(0);
    await a.running.stop();
    await b.running.stop();
  });
});
