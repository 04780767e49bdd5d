import { randomUUID } from "node:crypto";
import { Wallet, ZeroAddress, keccak256, parseEther } from "ethers";
import { runLiquidityCommand } from "../../scripts/liquidity";
import { startAdmin } from "../../services/admin/start-admin";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import type { TransferRecord } from "../../shared/protocol/types";
import { TX_JOB, txJobId } from "../../shared/queues";
import { approvalRecordId } from "../../shared/coordination/keys";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { liveChildPids } from "../harness/child-process";
import { mintToken, nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import { getFreePort } from "../harness/free-port";
import {
  CHAIN_ID,
  routerBalance,
  startSubmitterStack,
  submitterConfig,
  tokenBalance,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "./submitter-fixture";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * The liquidity routes through the real admin process (startAdmin), a real submitter, anvil with
 * the NXTP contracts and redis-server. The submitter's receipt polling is shortened (default 1 s) only to keep the
 * mined-receipt waits short; the admin's broadcast wait and every other interval are the shipped defaults.
 */
const ADMIN_TOKEN = "liquidity-admin-token-0123456789abcdef";
const PRE_APPROVED = 700n;
const WALLET_TOKENS = parseEther("50");

describe("admin liquidity routes (admin + submitter + anvil + redis)", () => {
  let s: SubmitterStack;
  let config: RouterConfig;
  let client: TxQueueClient;
  let submitter: RunningSubmitter;
  let admin: { stop(): Promise<void> };
  let baseUrl: string;
  let token: string;
  let tm: string;

  const post = async (
    path: string,
    body: Record<string, unknown>,
    requestId = randomUUID(),
  ): Promise<{ status: number; body: unknown; requestId: string }> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": requestId },
      body: JSON.stringify({ adminToken: ADMIN_TOKEN, ...body }),
    });
    return { status: res.status, body: await res.json(), requestId };
  };
  const finished = async (jobId: string) => {
    const job = await client.queue.getJob(jobId);
    if (!job) throw new Error(`no job ${jobId}`);
    return job.waitUntilFinished(client.events, 60_000);
  };
  const allowance = (): Promise<bigint> =>
    readBigInt(nxtpContractAt("ERC20", token, s.chain.provider), "allowance", [s.signer, tm]);
  const jobCount = async (): Promise<number> =>
    Object.values(await client.queue.getJobCounts()).reduce((a, b) => a + b, 0);

  beforeAll(async () => {
    s = await startSubmitterStack();
    token = s.chain.deployment.token;
    tm = s.chain.deployment.transactionManager;
    await mintToken(s.chain.deployment, s.signer, WALLET_TOKENS);
    // An allowance the wallet gave before: an add it covers sends no approval.
    const wallet = Wallet.fromPhrase(s.mnemonic, s.chain.provider);
    await sendTx(nxtpContractAt("ERC20", token, wallet), "approve", [tm, PRE_APPROVED]);

    const prefix = uniquePrefix();
    const raw = submitterConfig(s, prefix).raw;
    const pool = (assetId: string) => ({
      name: `pool-${assetId}`,
      assets: [
        { chainId: 1, assetId: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48" },
        { chainId: CHAIN_ID, assetId },
      ],
    });
    const port = await getFreePort();
    config = loadConfig(
      {
        ...raw,
        adminToken: ADMIN_TOKEN,
        host: "127.0.0.1",
        port,
        swapPools: [pool(token), pool(ZeroAddress)],
        cleanUpMode: true,
      },
      {},
    ).config;
    baseUrl = `http://127.0.0.1:${port}`;
    client = await txQueueClient(s.redisUrl, prefix);
    submitter = await startSubmitter({
      config,
      logger: captureLogs().logger,
      chainId: CHAIN_ID,
      options: { pollIntervalMs: 50 },
    });
    admin = await startAdmin({ config, logger: captureLogs("admin").logger, env: {} });
  });

  afterAll(async () => {
    await admin?.stop();
    await submitter?.stop();
    await client?.close();
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("ERC-20 add covered by the allowance: no approval, routerBalances grows by the amount", async () => {
    const before = await routerBalance(s, s.signer, token);
    const res = await post("/add-liquidity-for", { chainId: CHAIN_ID, assetId: token, amount: "500" });
    expect(res).toMatchObject({ status: 200, body: { transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
    const jobId = txJobId(TX_JOB.addLiquidityFor, res.requestId);
    await expect(finished(jobId)).resolves.toMatchObject({
      transactionHash: (res.body as { transactionHash: string }).transactionHash,
    });

    await expect(routerBalance(s, s.signer, token)).resolves.toBe(before + 500n);
    await expect(allowance()).resolves.toBe(PRE_APPROVED - 500n);
    await expect(client.record(approvalRecordId(jobId))).resolves.toBeUndefined();
  });

  it("ERC-20 add beyond the allowance: approves exactly the amount, then adds; a repeat with the same request id adds nothing more", async () => {
    const before = await routerBalance(s, s.signer, token);
    const walletBefore = await tokenBalance(s, s.signer);
    const amount = parseEther("3");
    const requestId = randomUUID();
    const res = await post(
      "/add-liquidity-for",
      { chainId: CHAIN_ID, assetId: token, amount: amount.toString() },
      requestId,
    );
    expect(res.status).toBe(200);
    const { transactionHash } = res.body as { transactionHash: string };
    const jobId = txJobId(TX_JOB.addLiquidityFor, requestId);
    await finished(jobId);

    await expect(routerBalance(s, s.signer, token)).resolves.toBe(before + amount);
    await expect(tokenBalance(s, s.signer)).resolves.toBe(walletBefore - amount);
    // approve(TransactionManager, amount) replaced the 200 left over; the add spent all of it.
    await expect(allowance()).resolves.toBe(0n);
    const approval = await client.record(approvalRecordId(jobId));
    expect(approval).toMatchObject({ status: "confirmed", call: { to: token } });
    const approvalReceipt = await s.chain.provider.getTransactionReceipt(approval?.result?.transactionHash ?? "");
    const addReceipt = await s.chain.provider.getTransactionReceipt(transactionHash);
    expect(addReceipt).toMatchObject({ status: 1, to: tm, from: s.signer });
    expect(approvalReceipt?.blockNumber).toBeLessThanOrEqual(addReceipt?.blockNumber ?? -1);

    const jobsBefore = await jobCount();
    const again = await post(
      "/add-liquidity-for",
      { chainId: CHAIN_ID, assetId: token, amount: amount.toString() },
      requestId,
    );
    expect(again).toMatchObject({ status: 200, body: { transactionHash } });
    expect(await jobCount()).toBe(jobsBefore);
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(before + amount);

    const conflict = await post("/add-liquidity-for", { chainId: CHAIN_ID, assetId: token, amount: "1" }, requestId);
    expect(conflict).toMatchObject({ status: 409, body: { error: "request_id_conflict" } });
  });

  it("an identical add under a new request id (a retry after a 504 without X-Request-Id) is the first add, not a second", async () => {
    const before = await routerBalance(s, s.signer, token);
    const body = { chainId: CHAIN_ID, assetId: token, amount: "321" };
    const first = await post("/add-liquidity-for", body);
    expect(first.status).toBe(200);
    const jobsBefore = await jobCount();
    const retry = await post("/add-liquidity-for", body);
    expect(retry).toMatchObject({ status: 200, body: first.body });
    expect(await jobCount()).toBe(jobsBefore);
    await finished(txJobId(TX_JOB.addLiquidityFor, first.requestId));
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(before + 321n);
    await expect(client.queue.getJob(txJobId(TX_JOB.addLiquidityFor, retry.requestId))).resolves.toBeUndefined();
  });

  it("native add: the amount is the call's value, no approval", async () => {
    const before = await routerBalance(s, s.signer, ZeroAddress);
    const res = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: ZeroAddress,
      amount: parseEther("2").toString(),
    });
    expect(res.status).toBe(200);
    const jobId = txJobId(TX_JOB.addLiquidityFor, res.requestId);
    await finished(jobId);
    await expect(routerBalance(s, s.signer, ZeroAddress)).resolves.toBe(before + parseEther("2"));
    const tx = await s.chain.provider.getTransaction((res.body as { transactionHash: string }).transactionHash);
    expect(tx?.value).toBe(parseEther("2"));
    await expect(client.record(approvalRecordId(jobId))).resolves.toBeUndefined();
  });

  it("adds for another approved router when routerAddress names it", async () => {
    const other = s.chain.deployment.routerContract ?? "";
    const before = await routerBalance(s, other, token);
    const res = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: token,
      amount: "77",
      routerAddress: other,
    });
    expect(res.status).toBe(200);
    await finished(txJobId(TX_JOB.addLiquidityFor, res.requestId));
    await expect(routerBalance(s, other, token)).resolves.toBe(before + 77n);
  });

  it("npm run liquidity: add and remove through the admin API, the token never printed, a refusal exits non-zero", async () => {
    const lines: string[] = [];
    const cli = (args: string[], requestId = randomUUID()) =>
      runLiquidityCommand(args, { baseUrl, adminToken: ADMIN_TOKEN, out: (l) => lines.push(l), requestId });
    const before = await routerBalance(s, s.signer, token);
    const addId = randomUUID();
    const added = await cli(["add", "--chain", String(CHAIN_ID), "--asset", token, "--amount", "42"], addId);
    expect(added).toEqual({ transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    await finished(txJobId(TX_JOB.addLiquidityFor, addId));
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(before + 42n);

    const recipient = Wallet.createRandom().address;
    const removeId = randomUUID();
    await cli(
      ["remove", "--chain", String(CHAIN_ID), "--asset", token, "--amount", "40", "--recipient", recipient],
      removeId,
    );
    await finished(txJobId(TX_JOB.removeLiquidity, removeId));
    await expect(tokenBalance(s, recipient)).resolves.toBe(40n);

    await expect(
      cli(["add", "--chain", String(CHAIN_ID), "--asset", token, "--amount", "1", "--router", recipient]),
    ).rejects.toThrow("/add-liquidity-for answered 409");
    await expect(cli(["add", "--chain", String(CHAIN_ID)])).rejects.toThrow("--asset is required");
    expect(lines.join("\n")).toContain("router_not_approved");
    expect(lines.join("\n")).not.toContain(ADMIN_TOKEN);
  });

  it("refuses before enqueuing: wallet short, asset in no pool, router not approved, bad body", async () => {
    const jobsBefore = await jobCount();
    const walletTokens = await tokenBalance(s, s.signer);
    const short = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: token,
      amount: (walletTokens + 1n).toString(),
    });
    expect(short).toMatchObject({ status: 409, body: { error: "insufficient_wallet_balance" } });
    const nativeShort = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: ZeroAddress,
      amount: parseEther("100000").toString(),
    });
    expect(nativeShort).toMatchObject({ status: 409, body: { error: "insufficient_wallet_balance" } });
    const noPool = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: s.chain.deployment.multicall,
      amount: "1",
    });
    expect(noPool).toMatchObject({ status: 400, body: { error: "asset_not_in_pool" } });
    const notApproved = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: token,
      amount: "1",
      routerAddress: Wallet.createRandom().address,
    });
    expect(notApproved).toMatchObject({ status: 409, body: { error: "router_not_approved" } });
    const badBody = await post("/add-liquidity-for", { chainId: CHAIN_ID, assetId: token, amount: "1.5" });
    expect(badBody).toMatchObject({ status: 400, body: { error: "invalid_amount" } });
    const zeroRouter = await post("/add-liquidity-for", {
      chainId: CHAIN_ID,
      assetId: token,
      amount: "1",
      routerAddress: ZeroAddress,
    });
    expect(zeroRouter).toMatchObject({ status: 400, body: { error: "invalid_body" } });
    const twice = await post("/migrate-liquidity", {
      chainId: CHAIN_ID,
      newRouterAddress: s.chain.deployment.routerContract,
      assets: [token, token.toLowerCase()],
    });
    expect(twice).toMatchObject({
      status: 400,
      body: { error: "invalid_body", message: "assets[1]: must not name an asset twice" },
    });
    const extra = await post("/process-active-transactions", { chainId: CHAIN_ID });
    expect(extra).toMatchObject({
      status: 400,
      body: { error: "invalid_body", message: "(body): 1 field is not accepted; accepted: adminToken" },
    });
    for (const path of ["/add-liquidity-for", "/migrate-liquidity", "/process-active-transactions"]) {
      const res = await fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ adminToken: "wrong", chainId: CHAIN_ID }),
      });
      expect(res.status).toBe(401);
      expect((await fetch(`${baseUrl}${path}`)).status).toBe(405);
    }
    expect(await jobCount()).toBe(jobsBefore);
  });

  it("migrate-liquidity is refused without clean-up mode, withdrawing nothing", async () => {
    const port = await getFreePort();
    const bidding = await startAdmin({
      config: { ...config, cleanUpMode: false, port },
      logger: captureLogs("admin").logger,
      env: {},
    });
    try {
      const before = await routerBalance(s, s.signer, token);
      const res = await fetch(`http://127.0.0.1:${port}/migrate-liquidity`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          adminToken: ADMIN_TOKEN,
          chainId: CHAIN_ID,
          newRouterAddress: s.chain.deployment.routerContract,
        }),
      });
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({ error: "clean_up_mode_off" });
      await expect(routerBalance(s, s.signer, token)).resolves.toBe(before);
    } finally {
      await bidding.stop();
    }
  });

  it("migrate-liquidity is refused while a transfer that receives on the chain is open", async () => {
    const store = createTransferStore(client.redis, config.redisPrefix);
    const record = openSendingSide();
    await store.put(record);
    try {
      const jobsBefore = await jobCount();
      const res = await post("/migrate-liquidity", {
        chainId: CHAIN_ID,
        newRouterAddress: s.chain.deployment.routerContract,
      });
      expect(res).toMatchObject({ status: 409, body: { error: "open_transfers" } });
      expect(await jobCount()).toBe(jobsBefore);

      const active = await post("/process-active-transactions", {});
      expect(active).toMatchObject({
        status: 200,
        body: [expect.objectContaining({ chainId: 1, transactionId: record.txData.transactionId, status: "Prepared" })],
      });
    } finally {
      await store.put({
        ...record,
        status: "Cancelled",
        cancelTransactionHash: `0x${"ee".repeat(32)}`,
      } as TransferRecord);
    }
  });

  it("migrate-liquidity moves all unlocked liquidity of every pool asset to the new router, and resumes on a repeat", async () => {
    const newRouter = s.chain.deployment.routerContract ?? "";
    const [tokenUnlocked, nativeUnlocked, tokenAtNew, nativeAtNew] = await Promise.all([
      routerBalance(s, s.signer, token),
      routerBalance(s, s.signer, ZeroAddress),
      routerBalance(s, newRouter, token),
      routerBalance(s, newRouter, ZeroAddress),
    ]);
    const requestId = randomUUID();
    const res = await post("/migrate-liquidity", { chainId: CHAIN_ID, newRouterAddress: newRouter }, requestId);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        assetId: token,
        amount: tokenUnlocked.toString(),
        removeLiquidityTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        addLiquidityForTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      },
      {
        assetId: ZeroAddress,
        amount: nativeUnlocked.toString(),
        removeLiquidityTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        addLiquidityForTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      },
    ]);
    for (const assetId of [token, ZeroAddress]) {
      await finished(txJobId(TX_JOB.addLiquidityFor, `migrate-${requestId}-${assetId.toLowerCase()}`));
    }
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(0n);
    await expect(routerBalance(s, s.signer, ZeroAddress)).resolves.toBe(0n);
    await expect(routerBalance(s, newRouter, token)).resolves.toBe(tokenAtNew + tokenUnlocked);
    await expect(routerBalance(s, newRouter, ZeroAddress)).resolves.toBe(nativeAtNew + nativeUnlocked);

    const jobsBefore = await jobCount();
    const again = await post("/migrate-liquidity", { chainId: CHAIN_ID, newRouterAddress: newRouter }, requestId);
    expect(again).toEqual({ status: 200, body: res.body, requestId });
    expect(await jobCount()).toBe(jobsBefore);
    await expect(routerBalance(s, newRouter, token)).resolves.toBe(tokenAtNew + tokenUnlocked);

    const nothing = await post("/migrate-liquidity", {
      chainId: CHAIN_ID,
      newRouterAddress: newRouter,
      assets: [token],
    });
    expect(nothing).toMatchObject({ status: 200, body: [{ assetId: token, error: "nothing_to_migrate" }] });
  });

  it("migrate-liquidity answers an unapproved new router per asset, withdrawing nothing", async () => {
    if ((await routerBalance(s, s.signer, token)) === 0n) {
      // The previous test moved everything: put some back through the route itself.
      const added = await post("/add-liquidity-for", { chainId: CHAIN_ID, assetId: token, amount: "1000" });
      await finished(txJobId(TX_JOB.addLiquidityFor, added.requestId));
    }
    const before = await routerBalance(s, s.signer, token);
    const res = await post("/migrate-liquidity", {
      chainId: CHAIN_ID,
      newRouterAddress: Wallet.createRandom().address,
      assets: [token],
    });
    expect(res).toMatchObject({ status: 200, body: [{ assetId: token, error: "router_not_approved" }] });
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(before);
  });
});

function openSendingSide(): TransferRecord {
  const user = "0x1111111111111111111111111111111111111111";
  return {
    status: "Prepared",
    chainId: 1,
    txData: {
      receivingChainTxManagerAddress: user,
      user,
      router: user,
      initiator: user,
      sendingAssetId: ZeroAddress,
      receivingAssetId: ZeroAddress,
      sendingChainFallback: user,
      callTo: ZeroAddress,
      receivingAddress: user,
      sendingChainId: 1,
      receivingChainId: CHAIN_ID,
      callDataHash: keccak256("0x"),
      transactionId: `0x${"42".repeat(32)}`,
      amount: "10",
      expiry: Math.floor(Date.now() / 1000) + 86_400,
      preparedBlockNumber: 5,
    },
    encryptedCallData: "0x",
    encodedBid: "0x01",
    bidSignature: "0x02",
    prepareTransactionHash: `0x${"cd".repeat(32)}`,
    preparedTimestamp: 50,
  };
}
