import { ZeroAddress, getAddress, parseEther, type Wallet } from "ethers";
import { amountAfterRouterFee } from "../../shared/protocol/amounts";
import type { StackChain } from "../harness/stack";
import { transferEvents } from "./e2e-user";
import { runSdkSwap, type SdkSwapParams, type SdkSwapResult } from "./run-sdk-swap";
import {
  RECEIVING,
  SENDING,
  assertPrerequisites,
  fundedUser,
  routerLiquidity,
  startRouterProcesses,
  startSdkStack,
  tokenBalance,
  type SdkStack,
  type StatusResponse,
} from "./sdk-fixture";
import { waitFor } from "../harness/wait";

/**
 * The real @connext/nxtp-sdk@0.1.42 (test/sdk: own node_modules, ethers v5, run as a child process) swaps
 * 1337 → 1338 through the router's own processes from dist/ (messaging-auth, auction, submitter and poller per
 * chain), in the ERC-20 pool (TEST) and the native pool (ETH): quote over NATS, prepare, the router's receiver
 * prepare, then the fulfill, once sent by the user and once relayed by the router. Every router process runs at
 * its shipped defaults (no interval is shortened): the relayed fulfill must not depend on a fast poller.
 * Balances are read from the chains and checked to the wei. The SDK runs offline: non-loopback calls are
 * refused and reported (test/sdk/network-guard.js).
 */
/** What the user offers the router for relaying: above the router's estimate (fulfill gas × gas price; native and TEST share one price). */
const RELAYER_FEE = parseEther("0.001");
/** Each SDK call of the driver; a healthy swap at the defaults takes a few seconds. */
const STEP_TIMEOUT_MS = 20_000;
const SWAP_TIMEOUT_MS = 40_000;
/** The router's claim follows the user's fulfill within the sending chain's poll interval (1 s) and a block. */
const CLAIM_TIMEOUT_MS = 15_000;
/**
 * The SDK's hard-coded endpoints (test/sdk/README.md, "Offline by construction"), refused through the axios adapter.
 * Anything else fails.
 */
const EXPECTED_BLOCKED =
  /^axios https:\/\/(subgraph-ts-worker\.connext\.workers\.dev\/subgraph_health\/|relay\.gelato\.digital\/relays\/)$/;

interface Balances {
  readonly userSending: bigint;
  readonly userReceiving: bigint;
  readonly liquiditySending: bigint;
  readonly liquidityReceiving: bigint;
  /** The router signer's own balance of the asset on the receiving chain (where relayer fees are paid). */
  readonly signerReceiving: bigint;
}

interface Pool {
  readonly name: "TEST" | "ETH";
  readonly amount: bigint;
  readonly assetId: (c: StackChain) => string;
}

const POOLS: readonly Pool[] = [
  { name: "TEST", amount: parseEther("10"), assetId: (c) => c.deployment.token },
  { name: "ETH", amount: parseEther("1"), assetId: () => ZeroAddress },
];

describe("the real @connext/nxtp-sdk@0.1.42 swaps through the router's processes at their defaults", () => {
  let s: SdkStack;
  let status: StatusResponse;

  beforeAll(async () => {
    assertPrerequisites(["messaging-auth/main.js", "auction/main.js", "submitter/main.js", "poller/main.js"]);
    s = await startSdkStack();
    status = await startRouterProcesses(s);
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
  });

  const swapParams = (pool: Pool, user: Wallet, mode: SdkSwapParams["mode"]): SdkSwapParams => {
    const chain = (c: StackChain): SdkSwapParams["chains"][number] => ({
      rpcUrl: c.anvil.url,
      transactionManager: c.deployment.transactionManager,
      subgraph: s.subgraphs.get(c.chainId)?.url ?? "",
    });
    return {
      mode,
      natsUrl: s.stack.nats?.url ?? "",
      authUrl: s.authUrl,
      sendingChainId: SENDING,
      receivingChainId: RECEIVING,
      sendingAssetId: pool.assetId(s.sending),
      receivingAssetId: pool.assetId(s.receiving),
      amount: pool.amount.toString(),
      chains: { [SENDING]: chain(s.sending), [RECEIVING]: chain(s.receiving) },
      userPrivateKey: user.privateKey,
      stepTimeoutMs: STEP_TIMEOUT_MS,
      ...(mode === "relayed" ? { relayerFee: RELAYER_FEE.toString() } : {}),
    };
  };

  const balances = async (pool: Pool, user: string): Promise<Balances> => ({
    userSending: await tokenBalance(s.sending, user, pool.assetId(s.sending)),
    userReceiving: await tokenBalance(s.receiving, user, pool.assetId(s.receiving)),
    liquiditySending: await routerLiquidity(s.sending, s.router, pool.assetId(s.sending)),
    liquidityReceiving: await routerLiquidity(s.receiving, s.router, pool.assetId(s.receiving)),
    signerReceiving: await tokenBalance(s.receiving, s.router, pool.assetId(s.receiving)),
  });

  /** What `hash` cost its sender in native gas (0 for an ERC-20 pool, whose balances gas does not touch). */
  const gasPaid = async (pool: Pool, chain: StackChain, hash: string): Promise<bigint> => {
    if (pool.name !== "ETH") return 0n;
    const receipt = await chain.provider.getTransactionReceipt(hash);
    if (!receipt) throw new Error(`no receipt for ${hash}`);
    return receipt.fee;
  };

  /** The router's claim: its fulfill of the sending side, once it saw the receiving side fulfilled. */
  const routerClaim = (transactionId: string): Promise<unknown> =>
    waitFor(
      "the router's fulfill on the sending chain (its claim)",
      async () => (await transferEvents(s.sending, "fulfilled", transactionId))[0],
      CLAIM_TIMEOUT_MS,
    );

  const swap = async (pool: Pool, user: Wallet, mode: SdkSwapParams["mode"]): Promise<SdkSwapResult> => {
    const r = await runSdkSwap(swapParams(pool, user, mode), SWAP_TIMEOUT_MS).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${s.outputTails()}`);
    });
    const steps = {
      quote: r.quote.ms,
      senderPrepared: r.senderPrepared.ms,
      receiverPrepared: r.receiverPrepared.ms,
      fulfilled: r.fulfilled.ms,
    };
    console.log(
      `sdk swap (${pool.name}, ${mode}): ${r.totalMs} ms in the driver, steps at ${JSON.stringify(steps)}, gas fee ${r.quote.gasFeeInReceivingToken}, refused calls ${JSON.stringify(r.blocked)}, SDK subgraph loop restarts ${r.subgraphPollingRestarts}`,
    );
    for (const target of Object.keys(r.blocked)) expect(target).toMatch(EXPECTED_BLOCKED);
    expect(r.connected.signedIn).toBe(true); // through the router's messaging-auth service
    const bid = r.quote.bid;
    expect(getAddress(bid.router)).toBe(s.router);
    expect(getAddress(bid.user)).toBe(user.address);
    expect(bid.amount).toBe(pool.amount.toString());
    // docs/protocol.md#router-fee: the 0.05 % router fee, then the gas fee the bid reports (non-zero: both chains have
    // oracle prices).
    const gasFee = BigInt(r.quote.gasFeeInReceivingToken);
    expect(gasFee).toBeGreaterThan(0n);
    expect(BigInt(bid.amountReceived)).toBe(
      amountAfterRouterFee({ amount: pool.amount, inputDecimals: 18, outputDecimals: 18 }) - gasFee,
    );
    expect(r.senderPrepared.transactionId).toBe(bid.transactionId);
    // The router locked exactly the bid's amountReceived on the receiving chain.
    expect(r.receiverPrepared.txData.amount).toBe(bid.amountReceived);
    expect(getAddress(r.receiverPrepared.txData.router)).toBe(s.router);
    await routerClaim(bid.transactionId);
    return r;
  };

  it("the auction answers a status request over NATS as the router signer", () => {
    expect(getAddress(status.signerAddress)).toBe(s.router);
    expect(getAddress(status.routerAddress)).toBe(s.router);
    expect(status.supportedChains).toEqual([SENDING, RECEIVING]);
  });

  describe.each(POOLS)("$name pool", (pool) => {
    it("quote, prepare, the router's receiver prepare, the user's own fulfill, the router's claim", async () => {
      const user = await fundedUser(s);
      const before = await balances(pool, user.address);
      const r = await swap(pool, user, "user");
      const amountReceived = BigInt(r.quote.bid.amountReceived);
      expect(getAddress(r.fulfilled.sender ?? "")).toBe(user.address);
      const after = await balances(pool, user.address);
      const prepareGas = await gasPaid(pool, s.sending, r.senderPrepared.transactionHash);
      const fulfillGas = await gasPaid(pool, s.receiving, r.fulfilled.transactionHash);
      expect(after.userSending).toBe(before.userSending - pool.amount - prepareGas);
      expect(after.userReceiving).toBe(before.userReceiving + amountReceived - fulfillGas);
      expect(after.liquidityReceiving).toBe(before.liquidityReceiving - amountReceived);
      expect(after.liquiditySending).toBe(before.liquiditySending + pool.amount);
      if (pool.name === "TEST") expect(after.signerReceiving).toBe(before.signerReceiving);
    }, 60_000);

    it("quote, prepare, the router's receiver prepare, the fulfill relayed by the router, the router's claim", async () => {
      const user = await fundedUser(s);
      const before = await balances(pool, user.address);
      const r = await swap(pool, user, "relayed");
      const amountReceived = BigInt(r.quote.bid.amountReceived);
      expect(getAddress(r.fulfilled.sender ?? "")).toBe(s.router);
      expect(r.fulfilled.relayerFee).toBe(RELAYER_FEE.toString());
      const after = await balances(pool, user.address);
      const prepareGas = await gasPaid(pool, s.sending, r.senderPrepared.transactionHash);
      expect(after.userSending).toBe(before.userSending - pool.amount - prepareGas);
      // The user paid no gas on the receiving chain: the relayer fee is all the fulfill cost them.
      expect(after.userReceiving).toBe(before.userReceiving + amountReceived - RELAYER_FEE);
      expect(after.liquidityReceiving).toBe(before.liquidityReceiving - amountReceived);
      expect(after.liquiditySending).toBe(before.liquiditySending + pool.amount);
      if (pool.name === "TEST") expect(after.signerReceiving).toBe(before.signerReceiving + RELAYER_FEE);
    }, 60_000);
  });
});
