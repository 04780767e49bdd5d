/**
 * `npm run bench:poller-rtt`: how the poller's detection latency grows with the RPC's round-trip time. Starts
 * anvil ×3 (chain 1 only because the config requires it), redis-server, deploys NXTP, and runs both swap chains'
 * pollers in this process (startPoller, at the shipped defaults) with their RPC behind a JSON-RPC proxy that adds
 * a fixed delay to every request (0 and 100 ms by default; POLLER_RTT_DELAYS_MS="0,50,200" to change). Per delay:
 *   - requests and sequential round trips (the tick's duration ÷ the delay) of one sending-chain tick on an
 *     empty new block, and of the tick that stores a user's prepare;
 *   - over three swaps: the user's prepare mined → the prepare-receiver job enqueued on tx-1338;
 *   - the user's fulfill on 1338 mined → the fulfill-sender job enqueued on tx-1337 (the receiving poller sees
 *     the fulfill, then the sending poller decides its record).
 * Reads are counted at the proxy, so the background head refresh and the loop's own head poll count too.
 * Self-contained: no test/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue } from "bullmq";
import { HDNodeWallet, Wallet, ZeroAddress, hexlify, keccak256, parseEther, randomBytes } from "ethers";
import { Redis } from "ioredis";
import { startPoller, type RunningPoller } from "../services/poller/start-poller";
import type { TickResult } from "../services/poller/tick";
import { anvilBinary, redisServerBinary } from "../scripts/local/binaries";
import {
  RECEIVING_CHAIN_ID,
  SENDING_CHAIN_ID,
  deployLocalChains,
  fundLocalChains,
  type LocalChainHandle,
} from "../scripts/local/chains";
import { nxtpContractAt, sendTx } from "../scripts/local/deploy-nxtp";
import { getFreePort } from "../scripts/local/free-port";
import { freshRouterSigner, localChainOf, localConfigJson } from "../scripts/local/local-config";
import { anvilAnswers, anvilArgs, redisAnswers, redisArgs, whileStarting } from "../scripts/local/probes";
import { fulfillAsUser, prepareWithBid, walletSigner } from "../scripts/local/swap-user";
import { loadConfig } from "../shared/config";
import { createLogger } from "../shared/logging/create-logger";
import { encodeBid, signBid } from "../shared/protocol/bid";
import { abiPrepareArgs } from "../shared/protocol/router-signatures";
import type { AuctionBid, TransactionData } from "../shared/protocol/types";
import { TX_JOB, transferKey, txJobId, txQueueName, type TxJobName } from "../shared/queues";
import { pollUntil, sleep } from "../shared/timing";
import { percentile, printFigures, runBench } from "./support";

const AMOUNT = parseEther("10");
const TICK_SAMPLES = 3;
/** Swaps per delay: the detection latencies depend on where in the poll interval a block lands. */
const SWAPS = 3;

/** A JSON-RPC proxy in front of `target` that holds every request `delayMs` before forwarding it, and logs it. */
interface DelayProxy {
  readonly url: string;
  readonly log: Array<{ readonly method: string; readonly startMs: number }>;
  close(): Promise<void>;
}

async function startDelayProxy(target: string, delayMs: number): Promise<DelayProxy> {
  const log: DelayProxy["log"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      const parsed = JSON.parse(body) as { method?: string } | Array<{ method?: string }>;
      const methods = Array.isArray(parsed) ? parsed.map((p) => p.method ?? "?") : [parsed.method ?? "?"];
      log.push({ method: methods.join("+"), startMs: Date.now() });
      void (async () => {
        await sleep(delayMs);
        const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
        const text = await answer.text();
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(text);
      })().catch(() => {
        res.writeHead(502);
        res.end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface TickSample {
  readonly requests: number;
  readonly durationMs: number;
  readonly methods: string;
}

/** The proxy's requests during a tick that ended now and took `durationMs`. */
function sampleOf(proxy: DelayProxy, tick: TickResult, endMs: number): TickSample {
  const inTick = proxy.log.filter((r) => r.startMs >= endMs - tick.durationMs && r.startMs <= endMs);
  const counts = new Map<string, number>();
  for (const r of inTick) counts.set(r.method, (counts.get(r.method) ?? 0) + 1);
  const methods = [...counts].map(([m, n]) => `${m}×${n}`).join(" ");
  return { requests: inTick.length, durationMs: tick.durationMs, methods };
}

interface Servers {
  readonly children: ChildProcess[];
  readonly redisUrl: string;
  readonly chains: Map<number, LocalChainHandle>;
}

async function startServers(router: string, user: Wallet): Promise<Servers> {
  const children: ChildProcess[] = [];
  const redisPort = await getFreePort();
  children.push(spawn(redisServerBinary(), redisArgs(redisPort), { stdio: "ignore" }));
  const urls = new Map<number, string>();
  for (const chainId of [1, SENDING_CHAIN_ID, RECEIVING_CHAIN_ID]) {
    const port = await getFreePort();
    children.push(spawn(anvilBinary(), anvilArgs(port, chainId), { stdio: "ignore" }));
    urls.set(chainId, `http://127.0.0.1:${port}`);
    await pollUntil(
      `anvil ${chainId}`,
      whileStarting(() => anvilAnswers(port, chainId, 500)),
    );
  }
  await pollUntil(
    "redis",
    whileStarting(() => redisAnswers(redisPort, 500)),
  );
  const chains = await deployLocalChains(urls, router);
  await fundLocalChains(chains, router, { user });
  return { children, redisUrl: `redis://127.0.0.1:${redisPort}`, chains };
}

interface SwapFigures {
  readonly transferTick: TickSample;
  readonly prepareDetectMs: number;
  readonly fulfillDetectMs: number;
}

interface RunFigures {
  readonly emptyTick: TickSample;
  /** The median of the swaps' ticks that stored the prepare. */
  readonly transferTick: TickSample;
  /** One per swap, ascending. */
  readonly prepareDetectMs: readonly number[];
  readonly fulfillDetectMs: readonly number[];
}

async function runAtDelay(
  servers: Servers,
  signer: { address: string; mnemonic: string },
  user: Wallet,
  delayMs: number,
): Promise<RunFigures> {
  const chain = (id: number): LocalChainHandle => servers.chains.get(id) as LocalChainHandle;
  const proxies = new Map<number, DelayProxy>();
  for (const id of [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID]) {
    proxies.set(id, await startDelayProxy(chain(id).rpcUrl, delayMs));
  }
  const sendingProxy = proxies.get(SENDING_CHAIN_ID) as DelayProxy;
  const prefix = `bench-rtt-${delayMs}`;
  const json = localConfigJson({
    mnemonic: signer.mnemonic,
    adminToken: "bench-admin-token-poller-rtt",
    adminPort: 1,
    redisUrl: servers.redisUrl,
    messagingUrl: "nats://127.0.0.1:1",
    authUrl: "http://127.0.0.1:1",
    mainnet: localChainOf(chain(1)),
    swapChains: [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map((id) => ({
      ...localChainOf(chain(id)),
      rpcUrl: (proxies.get(id) as DelayProxy).url,
    })),
  });
  const config = loadConfig({ ...json, redisPrefix: prefix, logLevel: "warn" }, {}).config;
  const logger = createLogger({ service: "bench-poller-rtt", level: "warn", stream: process.stderr });
  const ticks: Array<{ result: TickResult; atMs: number }> = [];
  const redis = new Redis(servers.redisUrl, { maxRetriesPerRequest: null });
  const queues = new Map(
    [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map((id) => [id, new Queue(txQueueName(id), { connection: redis, prefix })]),
  );
  const pollers: RunningPoller[] = [];
  try {
    for (const id of [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID]) {
      const startBlock = (await chain(id).provider.getBlockNumber()) + 1;
      const onTick =
        id === SENDING_CHAIN_ID ? (result: TickResult) => ticks.push({ result, atMs: Date.now() }) : undefined;
      pollers.push(await startPoller({ config, logger, chainId: id, options: { startBlock, onTick, ledger: null } }));
    }
    const nextTick = async (after: number): Promise<{ result: TickResult; atMs: number }> =>
      pollUntil("a sending-chain tick", () => ticks.length > after && ticks[ticks.length - 1], 60_000);
    await nextTick(0);

    // Ticks on an empty new block: the common case between a router's transfers.
    const empty: TickSample[] = [];
    for (let i = 0; i < TICK_SAMPLES; i += 1) {
      const seen = ticks.length;
      await chain(SENDING_CHAIN_ID).provider.send("evm_mine", []);
      const tick = await nextTick(seen);
      empty.push(sampleOf(sendingProxy, tick.result, tick.atMs));
    }

    // The user's prepare → the prepare-receiver job, and the tick that stored it.
    const jobAt = async (chainId: number, name: TxJobName, key: string): Promise<number> => {
      const queue = queues.get(chainId) as Queue;
      const job = await pollUntil(
        `${name} job`,
        async () => (await queue.getJob(txJobId(name, key))) ?? false,
        120_000,
        10,
      );
      return job.timestamp;
    };
    const swapOnce = async (): Promise<SwapFigures> => {
      const seenBeforePrepare = ticks.length;
      const bid = await userBid(servers, signer.address, user);
      const bidSignature = await signBid(walletSigner(routerWallet(signer.mnemonic)), bid);
      const sending = { ...localChainOf(chain(SENDING_CHAIN_ID)), provider: chain(SENDING_CHAIN_ID).provider };
      const prepared = await prepareWithBid(
        { chainId: SENDING_CHAIN_ID, provider: sending.provider, transactionManager: sending.transactionManager },
        user,
        bid,
        bidSignature,
      );
      const preparedAtMs = Date.now();
      const key = transferKey(bid.transactionId, user.address);
      const prepareJobAtMs = await jobAt(RECEIVING_CHAIN_ID, TX_JOB.prepareReceiver, key);
      // The job is enqueued during the tick's decide step: the tick itself ends a little later.
      const storing = await pollUntil("the tick that stored the prepare", () =>
        ticks.slice(seenBeforePrepare).find((t) => t.result.recordsChanged > 0),
      );
      const transferTick = sampleOf(sendingProxy, storing.result, storing.atMs);

      // The router's receiving prepare (as its submitter would send it), then the user's fulfill → fulfill-sender.
      const receiver = await routerPrepareReceiver(servers, signer.mnemonic, bid, bidSignature, prepared.txData);
      const receiving = chain(RECEIVING_CHAIN_ID);
      await fulfillAsUser(
        {
          chainId: RECEIVING_CHAIN_ID,
          provider: receiving.provider,
          transactionManager: receiving.deployment.transactionManager,
        },
        user,
        receiver,
      );
      const fulfilledAtMs = Date.now();
      const fulfillJobAtMs = await jobAt(SENDING_CHAIN_ID, TX_JOB.fulfillSender, key);
      return {
        transferTick,
        prepareDetectMs: prepareJobAtMs - preparedAtMs,
        fulfillDetectMs: fulfillJobAtMs - fulfilledAtMs,
      };
    };
    await approveSwaps(servers, user);
    const swaps: SwapFigures[] = [];
    for (let i = 0; i < SWAPS; i += 1) swaps.push(await swapOnce());
    const sorted = (pick: (f: SwapFigures) => number): number[] => swaps.map(pick).sort((a, b) => a - b);
    return {
      emptyTick: median(empty),
      transferTick: median(swaps.map((f) => f.transferTick)),
      prepareDetectMs: sorted((f) => f.prepareDetectMs),
      fulfillDetectMs: sorted((f) => f.fulfillDetectMs),
    };
  } finally {
    await Promise.all(pollers.map((p) => p.stop()));
    await Promise.all([...queues.values()].map((q) => q.close()));
    redis.disconnect();
    await Promise.all([...proxies.values()].map((p) => p.close()));
  }
}

function median(samples: readonly TickSample[]): TickSample {
  return [...samples].sort((a, b) => a.durationMs - b.durationMs)[Math.floor(samples.length / 2)];
}

/** The user's allowance for every swap of a run, given once: an approve just before each prepare would start
 * each prepare's block a fixed time after a tick. */
async function approveSwaps(servers: Servers, user: Wallet): Promise<void> {
  const sending = servers.chains.get(SENDING_CHAIN_ID) as LocalChainHandle;
  const token = nxtpContractAt("ERC20", sending.deployment.token, user.connect(sending.provider));
  await sendTx(token, "approve", [sending.deployment.transactionManager, AMOUNT * BigInt(SWAPS)]);
}

async function userBid(servers: Servers, router: string, user: Wallet): Promise<AuctionBid> {
  const sending = servers.chains.get(SENDING_CHAIN_ID) as LocalChainHandle;
  const receiving = servers.chains.get(RECEIVING_CHAIN_ID) as LocalChainHandle;
  const latest = await sending.provider.getBlock("latest");
  if (latest === null) throw new Error("no latest block");
  return {
    user: user.address,
    router,
    initiator: user.address,
    sendingChainId: SENDING_CHAIN_ID,
    sendingAssetId: sending.deployment.token,
    amount: AMOUNT.toString(),
    receivingChainId: RECEIVING_CHAIN_ID,
    receivingAssetId: receiving.deployment.token,
    amountReceived: ((AMOUNT * 9995n) / 10000n).toString(),
    receivingAddress: user.address,
    transactionId: hexlify(randomBytes(32)),
    expiry: latest.timestamp + 3 * 86400 + 3 * 3600,
    callDataHash: keccak256("0x"),
    callTo: ZeroAddress,
    encryptedCallData: "0x",
    sendingChainTxManagerAddress: sending.deployment.transactionManager,
    receivingChainTxManagerAddress: receiving.deployment.transactionManager,
    bidExpiry: latest.timestamp + 300,
  };
}

/** TransactionManager.prepare on the receiving chain from the router's own wallet; its TransactionData back. */
async function routerPrepareReceiver(
  servers: Servers,
  mnemonic: string,
  bid: AuctionBid,
  bidSignature: string,
  sender: TransactionData,
): Promise<TransactionData> {
  const receiving = servers.chains.get(RECEIVING_CHAIN_ID) as LocalChainHandle;
  const wallet = routerWallet(mnemonic).connect(receiving.provider);
  const { amount, expiry, preparedBlockNumber, ...invariantData } = sender;
  void amount;
  void preparedBlockNumber;
  const tm = nxtpContractAt("TransactionManager", receiving.deployment.transactionManager, wallet);
  const receiverExpiry = Number(expiry) - 86400;
  const receipt = await sendTx(tm, "prepare", [
    abiPrepareArgs({
      invariantData,
      amount: bid.amountReceived,
      expiry: receiverExpiry,
      encryptedCallData: "0x",
      encodedBid: encodeBid(bid),
      bidSignature,
      encodedMeta: "0x",
    }),
  ]);
  return {
    ...invariantData,
    amount: bid.amountReceived,
    expiry: receiverExpiry,
    preparedBlockNumber: receipt.blockNumber,
  };
}

/** The router's signer (account 0 of its mnemonic, as the config's signer derives it) as a plain Wallet. */
function routerWallet(mnemonic: string): Wallet {
  return new Wallet(HDNodeWallet.fromPhrase(mnemonic).privateKey);
}

async function main(): Promise<number> {
  const delays = (process.env.POLLER_RTT_DELAYS_MS ?? "0,100").split(",").map(Number);
  const signer = freshRouterSigner();
  const user = Wallet.createRandom();
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  log("bench:poller-rtt: starting anvil ×3 and redis, deploying NXTP");
  const servers = await startServers(signer.address, new Wallet(user.privateKey));
  const figures: Record<string, number> = {};
  try {
    for (const delayMs of delays) {
      const r = await runAtDelay(servers, signer, new Wallet(user.privateKey), delayMs);
      const rt = (s: TickSample): string =>
        delayMs > 0 ? `, ≈${(s.durationMs / delayMs).toFixed(1)} sequential round trips` : "";
      log(`added delay ${delayMs} ms per request:`);
      log(`  empty-block tick: ${r.emptyTick.requests} requests in ${r.emptyTick.durationMs} ms${rt(r.emptyTick)}`);
      log(`    ${r.emptyTick.methods}`);
      log(
        `  tick storing a prepare: ${r.transferTick.requests} requests in ${r.transferTick.durationMs} ms${rt(r.transferTick)}`,
      );
      log(`    ${r.transferTick.methods}`);
      log(`  prepare mined → prepare-receiver job: ${r.prepareDetectMs.join(", ")} ms`);
      log(`  fulfill mined → fulfill-sender job: ${r.fulfillDetectMs.join(", ")} ms`);
      figures[`empty_tick_ms_at_${delayMs}ms`] = r.emptyTick.durationMs;
      figures[`empty_tick_requests_at_${delayMs}ms`] = r.emptyTick.requests;
      figures[`transfer_tick_ms_at_${delayMs}ms`] = r.transferTick.durationMs;
      figures[`transfer_tick_requests_at_${delayMs}ms`] = r.transferTick.requests;
      figures[`prepare_detect_median_ms_at_${delayMs}ms`] = percentile(r.prepareDetectMs, 0.5);
      figures[`prepare_detect_max_ms_at_${delayMs}ms`] = percentile(r.prepareDetectMs, 1);
      figures[`fulfill_detect_median_ms_at_${delayMs}ms`] = percentile(r.fulfillDetectMs, 0.5);
      figures[`fulfill_detect_max_ms_at_${delayMs}ms`] = percentile(r.fulfillDetectMs, 1);
    }
  } finally {
    for (const child of servers.children) child.kill("SIGTERM");
  }
  printFigures("poller-rtt", figures);
  return 0;
}

runBench("bench:poller-rtt", main);
