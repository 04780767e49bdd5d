import { Wallet, ZeroHash, getAddress, hexlify, parseEther, randomBytes, type Contract } from "ethers";
import { Redis } from "ioredis";
import { createInventoryReader, observeInventory } from "../../services/admin/inventory";
import { startAdmin } from "../../services/admin/start-admin";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { metricsRegistry } from "../../shared/metrics/router-metrics";
import type { ScrapeHook } from "../../shared/metrics/process-observability";
import { ADD_LIQUIDITY_GAS_LIMIT, REMOVE_LIQUIDITY_GAS_LIMIT } from "../../shared/protocol/inventory";
import type { CancelledTransferRecord, PreparedTransferRecord } from "../../shared/protocol/types";
import { transferKey } from "../../shared/queues";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { anvilWallet } from "../harness/anvil";
import { fundRouterLiquidity, mintToken, nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import { getFreePort } from "../harness/free-port";
import { liveChildPids } from "../harness/child-process";
import { startStack, type Stack } from "../harness/stack";
import { createProcessResources } from "../../shared/process/process-resources";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * GET /inventory and GET /rebalance/plan through the real admin process (startAdmin) over redis-server and two
 * anvil chains with the NXTP contracts. A one-sided flow of swaps (1337 → 1338) is played on chain with the
 * router's real liquidity calls: each swap takes its amount out of the router's liquidity on 1338 (what the
 * user's fulfill does to it) and adds it on 1337 (what the router's claim does), and the balances reach Redis
 * the way the pollers write them (routerBalances read, then the balance store). Swaps in flight are the transfer
 * store's open records and a bid promise made by the reservation script.
 */
/** A JSON body as the tests read it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;
const ADMIN_TOKEN = "inventory-admin-token-0123456789abcdef";
const E18 = 10n ** 18n;
const START = 1000n * E18;
const FLOOR_1338 = 500n * E18;

describe("admin inventory routes (admin + anvil + redis)", () => {
  let stack: Stack;
  let config: RouterConfig;
  let redis: Redis;
  let admin: { stop(): Promise<void> };
  let baseUrl: string;
  let router: Wallet;
  const prefix = uniquePrefix();
  const tms = new Map<number, Contract>();
  const tokenOf = (chainId: number): string => stack.chain(chainId).deployment.token;

  const get = async (path: string, token: string | null = ADMIN_TOKEN) => {
    const res = await fetch(`${baseUrl}${path}`, {
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  /** What a poller tick does for the balances: routerBalances read on chain, written to Redis. */
  const syncBalances = async (): Promise<void> => {
    const balances = createBalanceStore(redis, prefix);
    for (const chainId of [1337, 1338]) {
      const amount = await readBigInt(tms.get(chainId)!, "routerBalances", [router.address, tokenOf(chainId)]);
      await balances.setRouterBalance(chainId, tokenOf(chainId), amount);
      await balances.setGasBalance(chainId, parseEther("10"));
    }
  };
  /** One settled swap 1337 → 1338 of `amount`, on chain: the router's real liquidity calls. Returns their gas. */
  const settledSwap = async (amount: bigint): Promise<{ removeGas: bigint; addGas: bigint }> => {
    const on1338 = nxtpContractAt(
      "TransactionManager",
      tms.get(1338)!.target as string,
      router.connect(stack.chain(1338).provider),
    );
    const removed = await sendTx(on1338, "removeLiquidity", [amount, tokenOf(1338), Wallet.createRandom().address]);
    const claimer = router.connect(stack.chain(1337).provider);
    await mintToken(stack.chain(1337).deployment, router.address, amount);
    const approved = await sendTx(nxtpContractAt("ERC20", tokenOf(1337), claimer), "approve", [
      tms.get(1337)!.target,
      amount,
    ]);
    const added = await sendTx(
      nxtpContractAt("TransactionManager", tms.get(1337)!.target as string, claimer),
      "addLiquidityFor",
      [amount, tokenOf(1337), router.address],
    );
    return { removeGas: removed.gasUsed, addGas: approved.gasUsed + added.gasUsed };
  };
  const openRecord = (chainId: number, amount: bigint): PreparedTransferRecord => ({
    status: "Prepared",
    chainId,
    encryptedCallData: "0x",
    encodedBid: "0x",
    bidSignature: "0x",
    prepareTransactionHash: ZeroHash,
    txData: {
      receivingChainTxManagerAddress: tms.get(1338)!.target as string,
      user: Wallet.createRandom().address,
      router: router.address,
      initiator: router.address,
      sendingAssetId: tokenOf(1337),
      receivingAssetId: tokenOf(1338),
      sendingChainFallback: router.address,
      callTo: getAddress("0x" + "00".repeat(20)),
      receivingAddress: router.address,
      sendingChainId: 1337,
      receivingChainId: 1338,
      callDataHash: ZeroHash,
      transactionId: hexlify(randomBytes(32)),
      amount: amount.toString(),
      expiry: 2_000_000_000,
      preparedBlockNumber: 1,
    },
  });
  const chainsOf = (body: Json) => Object.fromEntries((body.pools[0].chains as Array<Json>).map((c) => [c.chainId, c]));

  beforeAll(async () => {
    router = Wallet.createRandom() as unknown as Wallet;
    stack = await startStack({ chainIds: [1337, 1338], nats: false, routerSigner: router.address });
    redis = new Redis(stack.redis!.url);
    for (const chainId of [1337, 1338]) {
      const chain = stack.chain(chainId);
      await chain.anvil.setBalance(router.address, parseEther("10"));
      const funder = anvilWallet(3, chain.provider);
      await mintToken(chain.deployment, funder.address, START);
      await fundRouterLiquidity({
        deployment: chain.deployment,
        funder,
        router: router.address,
        assetId: chain.deployment.token,
        amount: START,
      });
      tms.set(chainId, nxtpContractAt("TransactionManager", chain.deployment.transactionManager, chain.provider));
    }
    const port = await getFreePort();
    const chain = (chainId: number) => ({
      providers: [stack.chain(chainId).anvil.url],
      transactionManagerAddress: stack.chain(chainId).deployment.transactionManager,
    });
    config = loadConfig(
      {
        adminToken: ADMIN_TOKEN,
        mnemonic: "test test test test test test test test test test test junk",
        host: "127.0.0.1",
        port,
        redisUrl: stack.redis!.url,
        redisPrefix: prefix,
        chainConfig: { "1": { providers: [stack.chain(1337).anvil.url] }, "1337": chain(1337), "1338": chain(1338) },
        swapPools: [
          {
            name: "TEST",
            assets: [
              { chainId: 1337, assetId: tokenOf(1337) },
              { chainId: 1338, assetId: tokenOf(1338) },
            ],
            inventory: {
              "1337": { targetPercent: 50, minimumPercent: 35 },
              "1338": { targetPercent: 50, minimumPercent: 35, floor: FLOOR_1338.toString() },
            },
          },
        ],
      },
      {},
    ).config;
    baseUrl = `http://127.0.0.1:${port}`;
    admin = await startAdmin({ config, logger: captureLogs("admin").logger, env: {} });
    await syncBalances();
  });

  afterAll(async () => {
    await admin?.stop();
    redis?.disconnect();
    await stack?.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("needs the admin token, like /status", async () => {
    expect(await get("/inventory", null)).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(await get("/rebalance/plan", "wrong-token-0123456789")).toMatchObject({ status: 401 });
  });

  it("starts balanced: 50 % each, ok, nothing to move", async () => {
    const res = await get("/inventory");
    expect(res.status).toBe(200);
    expect(res.body.pools[0]).toMatchObject({ pool: "TEST", poolIndex: 0 });
    expect(chainsOf(res.body)["1338"]).toMatchObject({
      decimals: 18,
      unlocked: START.toString(),
      total: START.toString(),
      sharePercent: 50,
      targetPercent: 50,
      minimumPercent: 35,
      floor: FLOOR_1338.toString(),
      state: "ok",
    });
    const plan = await get("/rebalance/plan");
    expect(plan.body).toMatchObject({ bridging: "operator", pools: [{ pool: "TEST", needed: false, moves: [] }] });
  });

  it("follows a one-sided flow: the receiving chain goes low, then critical; plan and gauges follow", async () => {
    const states: string[] = [];
    const shares: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const gas = await settledSwap(100n * E18);
      // The plan's gas figures are upper bounds of what the real calls use.
      expect(gas.removeGas).toBeLessThanOrEqual(REMOVE_LIQUIDITY_GAS_LIMIT);
      expect(gas.addGas).toBeLessThanOrEqual(ADD_LIQUIDITY_GAS_LIMIT);
      await syncBalances();
      const c = chainsOf((await get("/inventory")).body)["1338"];
      states.push(c.state);
      shares.push(c.sharePercent);
    }
    // 35 % is the minimum (35 itself is not below it); the floor is 500 (400 is below it).
    expect(shares).toEqual([45, 40, 35, 30, 25, 20]);
    expect(states).toEqual(["ok", "ok", "ok", "low", "low", "critical"]);

    const plan = await get("/rebalance/plan");
    expect(plan.status).toBe(200);
    expect(plan.body.pools[0].needed).toBe(true);
    expect(plan.body.pools[0].moves).toHaveLength(1);
    const [move] = plan.body.pools[0].moves;
    expect(move.from).toEqual({ chainId: 1337, assetId: tokenOf(1337).toLowerCase(), amount: (600n * E18).toString() });
    expect(move.to).toEqual({ chainId: 1338, assetId: tokenOf(1338).toLowerCase(), amount: (600n * E18).toString() });
    const gasPrice = await stack.chain(1337).provider.send("eth_gasPrice", []);
    expect(move.steps[0]).toMatchObject({
      chainId: 1337,
      step: "POST /remove-liquidity",
      gasLimit: REMOVE_LIQUIDITY_GAS_LIMIT.toString(),
    });
    expect(BigInt(move.steps[0].costWei)).toBe(REMOVE_LIQUIDITY_GAS_LIMIT * BigInt(move.steps[0].gasPriceWei));
    expect(BigInt(move.steps[0].gasPriceWei)).toBeGreaterThanOrEqual(BigInt(gasPrice) / 2n);
    expect(move.steps[1]).toMatchObject({ chainId: 1338, step: "POST /add-liquidity-for" });

    // The gauges the alerts read (ops/router-alerts.rules.yml RouterInventoryLow / RouterInventoryCritical).
    const resources = createProcessResources({
      config,
      logger: captureLogs().logger,
      service: "admin",
      redisKind: "request",
    });
    const hooks: ScrapeHook[] = [];
    observeInventory(
      { onScrape: (hook) => hooks.push(hook) },
      createInventoryReader({
        config,
        balances: createBalanceStore(redis, prefix),
        reservations: createBidReservations(redis, prefix),
        transfers: createTransferStore(redis, prefix),
        providerOf: resources.requireProvider,
        logger: captureLogs().logger,
      }),
    );
    try {
      for (const hook of hooks) await hook();
    } finally {
      await resources.close();
    }
    const text = await metricsRegistry().metrics();
    expect(text).toContain('router_inventory_share_percent{pool="TEST",chain="1338"} 20');
    expect(text).toContain('router_inventory_share_percent{pool="TEST",chain="1337"} 80');
    expect(text).toContain('router_inventory_minimum_percent{pool="TEST",chain="1338"} 35');
    expect(text).toContain('router_inventory_state{pool="TEST",chain="1338"} 2');
    expect(text).toContain('router_inventory_state{pool="TEST",chain="1337"} 0');
  });

  it("counts swaps in flight: owed on the sending chain, locked and promised on the receiving one", async () => {
    // The user's sending prepare on 1337 (owed), our receiving prepare on 1338 (locked: already out of its
    // routerBalances), and an open bid for another transfer on 1338 (promised).
    const transfers = createTransferStore(redis, prefix);
    await transfers.put(openRecord(1337, 50n * E18));
    await transfers.put(openRecord(1338, 50n * E18));
    // A sending side whose receiving side was cancelled goes back to the user: not owed.
    const refunded = openRecord(1337, 7n * E18);
    await transfers.put(refunded);
    await transfers.put({
      ...openRecord(1338, 7n * E18),
      txData: { ...refunded.txData, preparedBlockNumber: 1 },
      status: "Cancelled",
      cancelTransactionHash: ZeroHash,
    } satisfies CancelledTransferRecord);
    await syncBalances();
    const reserved = await createBidReservations(redis, prefix).reserve({
      sendingChainId: 1337,
      sendingAssetId: tokenOf(1337),
      receivingChainId: 1338,
      receivingAssetId: tokenOf(1338),
      transferKey: transferKey(hexlify(randomBytes(32)), router.address),
      amount: 30n * E18,
      nowMs: Date.now(),
      untilMs: Date.now() + 600_000,
      maxAgeMs: 60_000,
      rateLimitMs: 0,
      minGasSending: 0n,
      minGasReceiving: 0n,
      commit: true,
    });
    expect(reserved.code).toBe("ok");
    const c = chainsOf((await get("/inventory")).body);
    expect(c["1337"]).toMatchObject({ unlocked: (1600n * E18).toString(), owed: (50n * E18).toString(), locked: "0" });
    expect(c["1338"]).toMatchObject({
      unlocked: (400n * E18).toString(),
      locked: (50n * E18).toString(),
      promised: (30n * E18).toString(),
      owed: "0",
      total: (370n * E18).toString(),
      state: "critical",
    });
    // 370 / (1650 + 370)
    expect(c["1338"].sharePercent).toBeCloseTo(18.3168, 4);
  });
});
