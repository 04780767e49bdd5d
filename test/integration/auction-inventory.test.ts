import { parseEther } from "ethers";
import { transferKey } from "../../shared/queues";
import { metricsRegistry } from "../../shared/metrics/router-metrics";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createBalanceStore } from "../../shared/transfers/balance-store";
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
} from "./auction-fixture";
import { randomMnemonic } from "../harness/mnemonic";
import { uniquePrefix } from "../harness/prefix";

jest.setTimeout(120_000);

/**
 * The auction's inventory decline (docs/auction.md, "Inventory decline") end to end: a real auction process on
 * nats-server and redis-server, prices and gas from anvil chains. The pool holds 1 000 TEST on each chain with
 * targets 50/50 and minimum 40 %: a swap 1337 → 1338 may leave 1338 with y ≥ 0.4 × (1 000 + in + y), i.e. about
 * 200 TEST in at most. The inventory figures are re-read at the shipped interval (5 s).
 */
const LIQUIDITY = parseEther("1000");
const IN_100 = parseEther("100").toString();
const IN_300 = parseEther("300").toString();

let s: AuctionStack;
let client: Client;
let instance: AuctionInstance | undefined;
let prefix: string;

/** The refused volume counter's value for the route, from the process's registry. */
async function refusedUsd(route: string): Promise<number> {
  const metric = await metricsRegistry().getSingleMetric("router_refused_volume_usd_total")?.get();
  return metric?.values.find((v) => v.labels.route === route)?.value ?? 0;
}

beforeAll(async () => {
  s = await startAuctionStack();
  client = await startClient(s);
});

beforeEach(async () => {
  prefix = uniquePrefix();
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
});

afterEach(async () => {
  await instance?.running.stop();
  instance = undefined;
});

afterAll(async () => {
  await client?.close();
  await s?.stop();
});

/** Until the instance's inventory figures are in (its first read waits for the tokens' decimals). */
async function ruleActive(router: AuctionInstance): Promise<void> {
  await pollUntil(
    "the inventory rule to apply",
    async () => {
      const code = await askFor(router, client, { ...sdkPayload(s, { amount: IN_300 }), dryRun: true });
      return code === "InventoryBelowMinimum";
    },
    15_000,
  );
}

describe("inventory decline (auction + nats + redis + anvil)", () => {
  it("declines a swap that would take the receiving chain below its minimum share, answers a smaller one", async () => {
    const router = instance!;
    await ruleActive(router);
    const before = await refusedUsd(`${SENDING}-${RECEIVING}`);
    expect(await askFor(router, client, sdkPayload(s, { amount: IN_300 }))).toBe("InventoryBelowMinimum");
    const line = router.outcomes().find((l) => l.code === "InventoryBelowMinimum" && l.result === "refused");
    expect(String(line?.detail)).toMatch(
      /the bid would leave less than \d+, the receiving chain's floor or minimum share/,
    );
    // Counted in the refused volume at chain 1's oracle price (1 USD per TEST): 300 USD.
    expect((await refusedUsd(`${SENDING}-${RECEIVING}`)) - before).toBeCloseTo(300, 6);

    const bid = await askFor(router, client, sdkPayload(s, { amount: IN_100 }));
    expect(typeof bid).toBe("object");
  });

  it("counts a seen sending prepare (hard hold) on the receiving chain: the same small swap is then declined", async () => {
    const router = instance!;
    await ruleActive(router);
    // A user prepared 200 TEST to us on 1337 with an earlier bid: the poller pins that bid as a hard hold.
    const reservations = createBidReservations(s.redis, prefix);
    const held = transferKey(`0x${"ab".repeat(32)}`, `0x${"cd".repeat(20)}`);
    const nowMs = Date.now();
    await writeBalances(s, prefix, { liquidity: LIQUIDITY });
    await createBalanceStore(s.redis, prefix).setRouterBalance(SENDING, s.sendingToken, LIQUIDITY);
    const reserved = await reservations.reserve({
      sendingChainId: SENDING,
      sendingAssetId: s.sendingToken,
      receivingChainId: RECEIVING,
      receivingAssetId: s.receivingToken,
      transferKey: held,
      amount: parseEther("200"),
      nowMs,
      untilMs: nowMs + 600_000,
      maxAgeMs: 60_000,
      rateLimitMs: 0,
      minGasSending: 0n,
      minGasReceiving: 0n,
      commit: true,
    });
    expect(reserved.code).toBe("ok");
    expect(await reservations.pin(RECEIVING, s.receivingToken, held, nowMs + 600_000, parseEther("200"))).toBe(true);
    // Alone, 100 in would leave 1 000 − 99.2 = 900.8 ≥ 733.4 (0.4 × (1 000 + 100) / 0.6); with the hold,
    // 1 000 − 200 − 99.2 = 700.8: declined. 10 in leaves 790.8 ≥ 673.4: answered.
    expect(await askFor(router, client, sdkPayload(s, { amount: IN_100 }))).toBe("InventoryBelowMinimum");
    expect(typeof (await askFor(router, client, sdkPayload(s, { amount: parseEther("10").toString() })))).toBe(
      "object",
    );
  });
});
