"use strict";

/**
 * Drives one swap with the real @connext/nxtp-sdk@0.1.42 (ethers v5, from test/sdk/node_modules) against a
 * router reached only over NATS: quote → prepare on the sending chain → wait for the router's receiver prepare
 * (seen through the subgraph) → fulfill, by the user itself or relayed through the router (meta-tx).
 *
 * Run by test/e2e/sdk.test.ts as `node test/sdk/swap-driver.js` with env SDK_DRIVER_PARAMS (JSON, see
 * readParams). Prints one JSON line per step to stdout, each with `"sdkDriver": <step>` and `ms` since start
 * (the SDK's own pino logs may share stdout: parsers keep only lines carrying `sdkDriver`). Exits 0 after the
 * `done` line, 1 after an `error` line. Every step has its own timeout, so a hung SDK call ends the run with
 * the step's name.
 */

const axios = require("axios");
const httpAdapter = require("axios/lib/adapters/http");
const { installNetworkGuard } = require("./network-guard");

const startedAtMs = Date.now();

function emit(step, fields = {}) {
  process.stdout.write(`${JSON.stringify({ sdkDriver: step, ms: Date.now() - startedAtMs, ...fields })}\n`);
}

// Before the SDK is required: instances it creates at load time must already see the guarded adapter.
const { blocked } = installNetworkGuard(axios, httpAdapter, (entry) => {
  process.stderr.write(`[swap-driver] blocked ${entry.layer} call to ${entry.target}\n`);
});

const { NxtpSdk, NxtpSdkEvents } = require("@connext/nxtp-sdk");
const { Logger } = require("@connext/nxtp-utils");
const { providers, Wallet } = require("ethers");

/**
 * {
 *   mode: "user" | "relayed",
 *   natsUrl, authUrl, bearerToken?   (no token: the SDK signs in at authUrl itself)
 *   sendingChainId, receivingChainId, sendingAssetId, receivingAssetId, amount (decimal string),
 *   chains: { "<chainId>": { rpcUrl, transactionManager, subgraph } },
 *   userPrivateKey, relayerFee? (decimal string, relayed mode; default the SDK's own estimate),
 *   pollIntervalMs?, auctionWaitTimeMs?, stepTimeoutMs?, logLevel?
 * }
 */
function readParams() {
  const raw = process.env.SDK_DRIVER_PARAMS;
  if (!raw) throw new Error("SDK_DRIVER_PARAMS is not set");
  const params = JSON.parse(raw);
  if (params.mode !== "user" && params.mode !== "relayed")
    throw new Error(`mode must be "user" or "relayed", got ${params.mode}`);
  return params;
}

function withTimeout(label, promise, timeoutMs) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`step "${label}" timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function blockedSummary() {
  const counts = {};
  for (const { layer, target } of blocked) counts[`${layer} ${target}`] = (counts[`${layer} ${target}`] ?? 0) + 1;
  return counts;
}

/**
 * The SDK stops its subgraph loop for good whenever one poll finds no active transaction, and a single failed
 * subgraph request on one chain is enough for that (its getActiveTransactions then returns [] for the chain):
 * its events would never come. While the driver waits for them, a stopped loop is restarted and counted.
 */
function keepSubgraphPolling(sdk) {
  const subgraph = sdk.sdkBase.subgraph;
  let restarts = 0;
  const timer = setInterval(() => {
    if (subgraph.pollingLoop == null) {
      restarts += 1;
      subgraph.startPolling();
    }
  }, 200);
  return { restarts: () => restarts, stop: () => clearInterval(timer) };
}

async function main() {
  const p = readParams();
  const stepTimeoutMs = p.stepTimeoutMs ?? 15_000;
  const step = (label, promise) => withTimeout(label, promise, stepTimeoutMs);
  const provider = (chainId) => {
    const made = new providers.StaticJsonRpcProvider(p.chains[chainId].rpcUrl, Number(chainId));
    made.pollingInterval = 100; // tx.wait() polls at this rate (default 4 s); anvil mines at once
    return made;
  };
  const sendingProvider = provider(p.sendingChainId);
  const receivingProvider = provider(p.receivingChainId);
  const user = new Wallet(p.userPrivateKey);

  const chainConfig = {};
  for (const [chainId, c] of Object.entries(p.chains)) {
    chainConfig[chainId] = {
      providers: [c.rpcUrl],
      transactionManagerAddress: c.transactionManager,
      subgraph: [c.subgraph],
    };
  }
  const sdk = new NxtpSdk({
    chainConfig,
    signer: user.connect(sendingProvider),
    natsUrl: p.natsUrl,
    authUrl: p.authUrl,
    network: "local",
    skipPolling: true,
    chainData: new Map(), // otherwise the SDK fetches chain data from GitHub
    logger: new Logger({ level: p.logLevel ?? "warn", name: "nxtp-sdk" }),
  });
  sdk.sdkBase.subgraph.pollInterval = p.pollIntervalMs ?? 250;

  let current = "connect";
  let polling;
  try {
    const token = await step("connect", sdk.connectMessaging(p.bearerToken));
    // Whether the SDK signed in at authUrl itself (the token is a credential: only its presence is reported).
    emit("connected", { signedIn: p.bearerToken === undefined && typeof token === "string" && token.length > 0 });

    current = "quote";
    const quote = await step(
      "quote",
      sdk.getTransferQuote({
        sendingChainId: p.sendingChainId,
        sendingAssetId: p.sendingAssetId,
        receivingChainId: p.receivingChainId,
        receivingAssetId: p.receivingAssetId,
        receivingAddress: user.address,
        amount: p.amount,
        auctionWaitTimeMs: p.auctionWaitTimeMs ?? 5_000,
        numAuctionResponsesQuorum: 1,
      }),
    );
    emit("quote", {
      bid: quote.bid,
      bidSignature: quote.bidSignature,
      gasFeeInReceivingToken: quote.gasFeeInReceivingToken,
    });

    const transactionId = quote.bid.transactionId;
    // Attached before the prepare: the router may answer within one poll interval of the SDK's subgraph loop.
    const receiverPrepared = sdk.waitFor(
      NxtpSdkEvents.ReceiverTransactionPrepared,
      stepTimeoutMs,
      (d) => d.txData.transactionId === transactionId,
    );
    const receiverFulfilled = sdk.waitFor(
      NxtpSdkEvents.ReceiverTransactionFulfilled,
      2 * stepTimeoutMs,
      (d) => d.txData.transactionId === transactionId,
    );
    // Awaited below; until then a timeout (say, during a slow prepare) must not be an unhandled rejection.
    receiverPrepared.catch(() => undefined);
    receiverFulfilled.catch(() => undefined);

    current = "prepare";
    const { prepareResponse } = await step("prepare", sdk.prepareTransfer(quote, true));
    const prepareReceipt = await step("prepare mined", prepareResponse.wait(1));
    polling = keepSubgraphPolling(sdk); // prepareTransfer (re)started the loop; from here on a transfer is active
    emit("sender-prepared", {
      transactionId,
      transactionHash: prepareResponse.hash,
      blockNumber: prepareReceipt.blockNumber,
    });

    current = "receiver-prepared";
    const prepared = await step("receiver prepared", receiverPrepared);
    emit("receiver-prepared", { txData: prepared.txData, transactionHash: prepared.transactionHash });

    current = "fulfill";
    let fulfillHash;
    if (p.mode === "user") {
      // The user submits on the receiving chain, so the ethers v5 signer must be connected there.
      sdk.changeInjectedSigner(user.connect(receivingProvider));
      const { transactionHash } = await step("fulfill", sdk.fulfillTransfer(prepared, false));
      const receipt = await step("fulfill mined", receivingProvider.waitForTransaction(transactionHash, 1));
      if (receipt.status !== 1) throw new Error(`the user's fulfill ${transactionHash} reverted`);
      fulfillHash = transactionHash;
    } else {
      const params = p.relayerFee === undefined ? prepared : { ...prepared, relayerFee: p.relayerFee };
      ({ transactionHash: fulfillHash } = await step("relayed fulfill", sdk.fulfillTransfer(params, true)));
    }
    const fulfilled = await step("receiver fulfilled", receiverFulfilled);
    const fulfillTx = await receivingProvider.getTransaction(fulfillHash);
    emit("fulfilled", {
      transactionHash: fulfillHash,
      sender: fulfillTx ? fulfillTx.from : null,
      relayerFee: fulfilled.relayerFee ?? null,
    });
    emit("done", { blocked: blockedSummary(), subgraphPollingRestarts: polling.restarts() });
    polling.stop();
    sdk.removeAllListeners();
    return 0;
  } catch (err) {
    emit("error", {
      at: current,
      message: err && err.message ? err.message : String(err),
      type: err && err.type,
      context: err && err.context,
      blocked: blockedSummary(),
      subgraphPollingRestarts: polling ? polling.restarts() : 0,
    });
    return 1;
  }
}

// The SDK's chain reader and subgraph keep timers alive, and a NATS close triggers a re-auth: exit explicitly.
main().then(
  (code) => process.exit(code),
  (err) => {
    emit("error", { at: "setup", message: err && err.message ? err.message : String(err), blocked: blockedSummary() });
    process.exit(1);
  },
);
