import { parseEther } from "ethers";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import {
  RECEIVING,
  SENDING,
  auctionConfig,
  sdkPayload,
  startAuctionStack,
  startClient,
  startInstance,
  type AuctionInstance,
  type AuctionStack,
  type Client,
} from "./auction-fixture";
import { waitFor } from "../harness/wait";
import { randomMnemonic } from "../harness/mnemonic";
import { uniquePrefix } from "../harness/prefix";

jest.setTimeout(60_000);

/**
 * Ready means able to bid: an auction instance started before the pollers wrote any balance
 * reports itself not ready, naming what is cold, and a quote that arrives then is answered with a bid as soon as
 * the balances are there, instead of being refused in silence (the SDK never asks twice).
 */
describe("auction: ready means able to bid", () => {
  let s: AuctionStack;
  let client: Client;
  let instance: AuctionInstance;
  let prefix: string;

  beforeAll(async () => {
    s = await startAuctionStack();
    prefix = uniquePrefix();
    // No balances under this prefix yet: as right after `pm2 start`, before the pollers' first tick.
    instance = await startInstance({
      config: auctionConfig(s, { prefix, mnemonic: randomMnemonic() }),
      injectMessaging: true,
    });
    client = await startClient(s);
  });

  afterAll(async () => {
    await client?.close();
    await instance?.running.stop();
    await s?.stop();
  });

  it("is not ready while balances are cold, answers a quote that arrived meanwhile once they are fresh, then is ready", async () => {
    const cold = await instance.running.biddingReady();
    expect(cold).toContain(`liquidity ${RECEIVING}:`);
    expect(cold).toContain(`gas balance ${SENDING}`);

    const payload = sdkPayload(s);
    const inbox = client.request(payload);
    await waitFor("the instance's first, cold, attempt", () =>
      instance.logs.find("auction.cold").find((l) => l.transactionId === payload.transactionId),
    );
    const balances = createBalanceStore(s.redis, prefix);
    for (const chainId of [SENDING, RECEIVING]) await balances.setGasBalance(chainId, parseEther("10"));
    await balances.setRouterBalance(SENDING, s.sendingToken, parseEther("1000000"));
    await balances.setRouterBalance(RECEIVING, s.receivingToken, parseEther("1000000"));

    const response = await client.responseTo(inbox, 5_000);
    expect(response.responder).toBe(instance.running.signerAddress);
    const outcome = await waitFor("the outcome line", () =>
      instance.outcomes().find((l) => l.transactionId === payload.transactionId),
    );
    expect(outcome).toMatchObject({ result: "bid", code: "ok" });
    expect(outcome.coldRetries).toBeGreaterThanOrEqual(1);
    expect(await instance.running.biddingReady()).toBeUndefined();
  });
});
