import { parseEther } from "ethers";
import { UNPREPARED_SHARE_PERCENT } from "../../shared/transfers/bid-reservations";
import { pollUntil } from "../../shared/timing";
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

jest.setTimeout(120_000);

/**
 * Can a requester with nothing at stake use the inventory decline (docs/auction.md, "Inventory decline") to make
 * the router refuse other users? It can ask for bids it never prepares, on either route, as often as the rate
 * limit lets each transfer id. The rule counts the receiving chain's balance and hard holds (sending prepares
 * seen on chain: real funds locked), never unprepared promises, so such a swarm cannot move the receiving chain
 * towards its minimum; its promises on the other route lower the *other* chains' totals, which only loosens the
 * rule. A real auction process on nats-server and redis-server, prices and gas from anvil chains; 1 000 TEST on
 * each chain, targets 50/50, minimum 40 %.
 */
const LIQUIDITY = parseEther("1000");
const IN_150 = parseEther("150").toString();

let s: AuctionStack;
let swarm: Client;
let honest: Client;
let instance: AuctionInstance;

beforeAll(async () => {
  s = await startAuctionStack();
  swarm = await startClient(s);
  honest = await startClient(s);
  const prefix = uniquePrefix();
  const balances = await writeBalances(s, prefix, { liquidity: LIQUIDITY });
  await balances.setRouterBalance(SENDING, s.sendingToken, LIQUIDITY);
  instance = await startInstance({
    config: auctionConfig(s, {
      prefix,
      mnemonic: randomMnemonic(),
      inventory: {
        [String(SENDING)]: { targetPercent: 50, minimumPercent: 40 },
        [String(RECEIVING)]: { targetPercent: 50, minimumPercent: 40 },
      },
    }),
  });
  // The rule is on once the instance has read the figures: a 300 TEST swap is then declined for it.
  await pollUntil(
    "the inventory rule to apply",
    async () =>
      (await askFor(instance, honest, { ...sdkPayload(s, { amount: parseEther("300").toString() }), dryRun: true })) ===
      "InventoryBelowMinimum",
    15_000,
  );
});

afterAll(async () => {
  await instance?.running.stop();
  for (const c of [swarm, honest]) await c?.close();
  await s?.stop();
});

describe("inventory decline: requesters that never prepare", () => {
  it("a swarm of bids never prepared cannot make the router decline an honest swap for inventory", async () => {
    // 20 bids of ~149 TEST out, never prepared: 2 983 TEST promised on 1338, three times its balance. The
    // liquidity rule counts them only up to its share of the free liquidity; the inventory rule not at all.
    const answered: unknown[] = [];
    for (let i = 0; i < 20; i += 1) answered.push(await askFor(instance, swarm, sdkPayload(s, { amount: IN_150 })));
    expect(answered.filter((a) => typeof a !== "object")).toEqual([]);
    expect(UNPREPARED_SHARE_PERCENT).toBe(50);
    // The same swap from an honest user is still answered: 1 000 − 149 = 851 ≥ 766.7 (0.4 × 1 150 / 0.6).
    expect(typeof (await askFor(instance, honest, sdkPayload(s, { amount: IN_150 })))).toBe("object");
  });

  it("a swarm on the reverse route only loosens the rule for the honest direction, never tightens it", async () => {
    // Bids 1338 → 1337 promise liquidity on 1337, lowering 1337's total (the "others" of a 1337 → 1338 swap).
    const reverse = (): Record<string, unknown> => ({
      ...sdkPayload(s, { amount: IN_150 }),
      sendingChainId: RECEIVING,
      sendingAssetId: s.receivingToken,
      receivingChainId: SENDING,
      receivingAssetId: s.sendingToken,
    });
    for (let i = 0; i < 5; i += 1) {
      // 1337's balance is in Redis (set above): each is answered, or refused for 1337's own rules, never for 1338's.
      const answer = await askFor(instance, swarm, reverse());
      expect(answer).not.toBe("InventoryBelowMinimum");
    }
    expect(typeof (await askFor(instance, honest, sdkPayload(s, { amount: IN_150 })))).toBe("object");
    // And the rule still holds for the honest direction: 300 in is declined.
    expect(await askFor(instance, honest, sdkPayload(s, { amount: parseEther("300").toString() }))).toBe(
      "InventoryBelowMinimum",
    );
  });
});
