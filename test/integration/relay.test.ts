import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue } from "bullmq";
import { Wallet, ZeroAddress, ZeroHash, getBytes, hexlify, parseEther, randomBytes } from "ethers";
import { connect, type NatsConnection } from "nats";
import type { AuthServer } from "../../services/messaging-auth/app";
import { startAuction, type RunningAuction } from "../../services/auction/start-auction";
import { contractInterface } from "../../shared/chain/contracts";
import { loadConfig } from "../../shared/config";
import type { TransactionData } from "../../shared/protocol/types";
import { fulfillPayloadHash } from "../../shared/protocol/user-signatures";
import { TX_JOB, transferKey, txJobId, txQueueName, type RelayFulfillJobData } from "../../shared/queues";
import { txRecordKey } from "../../shared/coordination/keys";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { startAuthServer } from "../harness/auth-server";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { startNats, type NatsServer } from "../harness/nats";
import {
  RECEIVING,
  routerConfigJson,
  startE2eStack,
  startRouter,
  stopE2eStack,
  type E2eStack,
  type Router,
} from "../e2e/e2e-fixture";
import { senderOf, tokenBalance, transferEvents, userPrepare, waitForEvent, type UserTransfer } from "../e2e/e2e-user";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";

/**
 * Meta-transaction relaying end to end (docs/relaying.md): the router's pollers and submitters for 1337 and
 * 1338 run in this process (e2e fixture), the auction process runs through the real startAuction on a real
 * nats-server, and the test talks to it only as the SDK does: raw NATS, the exact metatx.request envelope of
 * the SDK 0.1.42 (docs/protocol.md#metatx-request) on `<M>.<M>.metatx.request`, answers read on
 * `<M>.*.metatx.response`.
 */
interface Reply {
  readonly subject: string;
  readonly data: { transactionHash?: string; chainId?: number } | null;
  readonly error: { type: string; message: string; context: Record<string, unknown> } | null;
}

const RELAY_JOB = (t: UserTransfer): string =>
  txJobId(TX_JOB.relayFulfill, transferKey(t.transactionId, t.txData.user));

/**
 * A JSON-RPC pass-through to anvil that counts the `variantTransactionData` reads (ethers batches: arrays too)
 * and, while `hideVariants(true)`, answers them with the zero word: a provider that does not show a prepare yet.
 */
interface CountingRpc {
  readonly url: string;
  variantReads(): number;
  hideVariants(hidden: boolean): void;
  close(): Promise<void>;
}

interface RpcCall {
  readonly id?: unknown;
  readonly method?: string;
  readonly params?: Array<{ data?: string }>;
}

async function startCountingRpc(targetUrl: string): Promise<CountingRpc> {
  const selector = contractInterface("TransactionManager").getFunction("variantTransactionData")?.selector ?? "";
  let reads = 0;
  let hidden = false;
  const isVariantRead = (c: RpcCall): boolean =>
    c.method === "eth_call" && (c.params?.[0]?.data?.startsWith(selector) ?? false);
  const body = async (req: IncomingMessage): Promise<string> => {
    let text = "";
    for await (const chunk of req) text += String(chunk);
    return text;
  };
  const answer = async (call: RpcCall): Promise<unknown> => {
    if (isVariantRead(call)) {
      reads += 1;
      if (hidden) return { jsonrpc: "2.0", id: call.id, result: ZeroHash };
    }
    const res = await fetch(targetUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(call),
    });
    return res.json();
  };
  const server = createServer((req, res) => {
    void (async () => {
      const parsed = JSON.parse(await body(req)) as RpcCall | RpcCall[];
      const reply = Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(reply));
    })().catch(() => {
      res.writeHead(502);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    variantReads: () => reads,
    hideVariants: (value) => {
      hidden = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("relayed fulfill: the SDK's metatx.request → receiving fulfill → the router's claim", () => {
  let s: E2eStack;
  let nats: NatsServer;
  let auth: AuthServer;
  let r: Router;
  let client: NatsConnection;
  let auction: RunningAuction | undefined;
  let transfer: UserTransfer;
  let receiver: TransactionData;
  const messagingAddress = Wallet.createRandom().address; // the SDK's random messaging signer <M>
  const replies = new Map<string, Reply>();
  const auctionLogs = captureLogs();

  const startRelayAuction = async (
    allowRelay: boolean,
    topLevel: Record<string, unknown> = {},
    receivingProvider?: string,
  ): Promise<RunningAuction> => {
    const raw = routerConfigJson(s, r.prefix, {}) as { chainConfig: Record<string, Record<string, unknown>> } & Record<
      string,
      unknown
    >;
    raw.chainConfig[String(RECEIVING)] = {
      ...raw.chainConfig[String(RECEIVING)],
      allowRelay,
      relayerFeeThreshold: 10,
      priceOracleAddress: s.receiving.deployment.priceOracle,
      ...(receivingProvider ? { providers: [receivingProvider] } : {}),
    };
    const config = loadConfig(
      { ...raw, messagingUrl: nats.url, authUrl: auth.url, network: "local", ...topLevel },
      {},
    ).config;
    return startAuction({ config, logger: auctionLogs.logger, options: { warmupTimeoutMs: 10_000 } });
  };

  /** Publishes like the SDK (envelope with responseInbox, version 0.0.1, error null) and waits for the answer. */
  const ask = async (payload: unknown): Promise<Reply> => {
    const inbox = `_INBOX.${randomUUID()}`;
    client.publish(
      `${messagingAddress}.${messagingAddress}.metatx.request`,
      JSON.stringify({ responseInbox: inbox, data: payload, version: "0.0.1", error: null }),
    );
    return waitFor(`metatx reply on ${inbox}`, async () => replies.get(inbox), 45_000);
  };

  /** The request the SDK's fulfillTransfer(…, useRelayers=true) publishes, signed by `signer` (the user by default). */
  const sdkRequest = async (
    txData: TransactionData,
    relayerFee: string,
    signer: Pick<Wallet, "signMessage"> = s.user,
  ): Promise<Record<string, unknown>> => {
    const hash = fulfillPayloadHash({
      transactionId: txData.transactionId,
      relayerFee,
      receivingChainId: txData.receivingChainId,
      receivingChainTxManagerAddress: txData.receivingChainTxManagerAddress,
    });
    const signature = await signer.signMessage(getBytes(hash));
    return {
      type: "Fulfill",
      relayerFee,
      to: s.receiving.deployment.transactionManager,
      chainId: txData.receivingChainId,
      data: { relayerFee, signature, txData, callData: "0x" },
    };
  };

  const relayJobs = async (): Promise<string[]> =>
    (await r.jobIds(RECEIVING)).filter((id) => id.startsWith(`${TX_JOB.relayFulfill}-`));

  beforeAll(async () => {
    s = await startE2eStack();
    [nats, auth] = await Promise.all([startNats(), startAuthServer()]);
    // Native and TEST at the same price on 1338's oracle: the fulfill's fee in TEST is its gas cost in wei.
    const oracle = nxtpContractAt("ConnextPriceOracle", s.receiving.deployment.priceOracle, s.receiving.deployer);
    await sendTx(oracle, "setDirectPrice", [ZeroAddress, parseEther("1")]);
    await sendTx(oracle, "setDirectPrice", [s.receiving.deployment.token, parseEther("1")]);
    // The submitter prices the relay with the same oracle as the auction: unpriced, it would refuse (RELAY_UNPRICED).
    r = await startRouter(s, {
      admin: false,
      chainExtra: { [RECEIVING]: { priceOracleAddress: s.receiving.deployment.priceOracle } },
    });
    client = await connect({ servers: nats.url });
    client.subscribe(`${messagingAddress}.*.metatx.response`, {
      callback: (err, msg) => {
        if (err) return;
        const envelope = JSON.parse(new TextDecoder().decode(msg.data)) as {
          responseInbox: string;
          data: Reply["data"];
          error: Reply["error"];
        };
        replies.set(envelope.responseInbox, { subject: msg.subject, data: envelope.data, error: envelope.error });
      },
    });
    // One transfer, prepared by the router on 1338 and recorded by 1338's poller, for every test below.
    transfer = await userPrepare(s);
    receiver = (await waitForEvent(s.receiving, "prepared", transfer.transactionId, 30_000)).txData;
    const store = createTransferStore(r.redis, r.prefix);
    await waitFor("receiving record", async () =>
      (await store.get(RECEIVING, transfer.transactionId, transfer.txData.user))?.status === "Prepared"
        ? true
        : undefined,
    );
  }, 180_000);

  afterEach(async () => {
    await auction?.stop();
    auction = undefined;
  });

  afterAll(async () => {
    await auction?.stop();
    await client?.close();
    await r?.stop();
    await Promise.allSettled([auth?.close(), nats?.stop()]);
    await stopE2eStack(s);
  });

  it("refuses with an error reply when allowRelay is false on the receiving chain", async () => {
    auction = await startRelayAuction(false);
    const reply = await ask(await sdkRequest(receiver, "0"));
    expect(reply.subject).toBe(`${messagingAddress}.${auction.signerAddress}.metatx.response`);
    expect(reply.data).toBeNull();
    expect(reply.error).toMatchObject({
      type: "NotAllowedFulfillRelayError",
      context: { code: "NOT_ALLOWED_FULFILL_RELAY", transactionId: receiver.transactionId },
    });
    expect(await relayJobs()).toEqual([]);
  }, 60_000);

  it("refuses a fee below the threshold, a signature not the user's, an unknown transfer and tampered txData: each with an error reply and no job", async () => {
    auction = await startRelayAuction(true);

    const lowFee = await ask(await sdkRequest(receiver, "1"));
    expect(lowFee.error).toMatchObject({
      type: "NotEnoughRelayerFeeError",
      context: { relayerFee: "1", relayerFeeThreshold: 10 },
    });
    const expectedFee = BigInt(lowFee.error?.context.expectedFee as string);
    expect(expectedFee).toBeGreaterThan(1n);
    expect(BigInt(lowFee.error?.context.lowerBound as string)).toBe((expectedFee * 90n) / 100n);

    const relayerFee = (expectedFee * 2n).toString();
    const stranger = await ask(await sdkRequest(receiver, relayerFee, Wallet.createRandom()));
    expect(stranger.error?.type).toBe("InvalidFulfillSignatureError");

    const unknown = { ...receiver, transactionId: hexlify(randomBytes(32)) };
    expect((await ask(await sdkRequest(unknown, relayerFee))).error?.type).toBe("UnknownTransferError");

    const tampered = await ask(
      await sdkRequest({ ...receiver, amount: (BigInt(receiver.amount) + 1n).toString() }, relayerFee),
    );
    expect(tampered.error).toMatchObject({ type: "TransferMismatchError", context: { fields: ["amount"] } });

    const garbage = await ask({
      type: "RouterContractFulfill",
      to: receiver.receivingChainTxManagerAddress,
      chainId: RECEIVING,
      data: { params: {} },
    });
    expect(garbage.error?.type).toBe("InvalidMetaTxTypeError");

    expect(await relayJobs()).toEqual([]);
    const refused = auctionLogs
      .lines()
      .filter((l) => l.at === "auction.metatx" && l.outcome === "refused")
      .map((l) => l.code);
    expect(refused).toEqual(
      expect.arrayContaining([
        "NOT_ENOUGH_RELAYER_FEE",
        "INVALID_FULFILL_SIGNATURE",
        "UNKNOWN_TRANSFER",
        "TRANSFER_MISMATCH",
        "INVALID_METATX_TYPE",
      ]),
    );
  }, 90_000);

  it("refuses in diagnosticMode, drops a request without data, answers garbage with an error and stays up", async () => {
    auction = await startRelayAuction(true, { diagnosticMode: true });
    const publish = (body: string): string => {
      const inbox = `_INBOX.${randomUUID()}`;
      client.publish(`${messagingAddress}.${messagingAddress}.metatx.request`, body.replace("INBOX", inbox));
      return inbox;
    };
    const dataless = publish('{"responseInbox":"INBOX","data":null,"version":"0.0.1","error":null}');
    publish("{not json");
    const garbage = await ask({ type: "Fulfill", to: 7, chainId: "x", data: [] });
    expect(garbage.error?.type).toBe("InvalidMetaTxPayloadError");
    expect([...replies.keys()]).not.toContain(dataless);
    expect(auctionLogs.lines()).toContainEqual(expect.objectContaining({ at: "auction.metatx", outcome: "dropped" }));

    const diagnostic = await ask(await sdkRequest(receiver, "0"));
    expect(diagnostic.error).toMatchObject({ type: "RelayDisabledError", context: { code: "RELAY_DISABLED" } });
    expect(await relayJobs()).toEqual([]);
  }, 60_000);

  it("relays the user's fulfill on 1338 (the router earns the fee), the router claims 1337, and asking again answers the same hash", async () => {
    auction = await startRelayAuction(true);
    const probe = await ask(await sdkRequest(receiver, "1"));
    const relayerFee = BigInt(probe.error?.context.expectedFee as string) * 2n;
    const request = await sdkRequest(receiver, relayerFee.toString());
    const routerTokensBefore = await tokenBalance(s.receiving, s.router);

    // Two at once: one job under the deterministic id, both answered with its broadcast.
    const [first, second] = await Promise.all([ask(request), ask(request)]);
    expect(first.error).toBeNull();
    expect(first.data).toEqual({ transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), chainId: RECEIVING });
    expect(second.data).toEqual(first.data);

    const fulfilled = await waitForEvent(s.receiving, "fulfilled", transfer.transactionId, 30_000);
    expect(fulfilled.transactionHash).toBe(first.data?.transactionHash);
    expect(await senderOf(s.receiving, fulfilled)).toBe(s.router);
    expect(await tokenBalance(s.receiving, s.router)).toBe(routerTokensBefore + relayerFee);

    const claimed = await waitForEvent(s.sending, "fulfilled", transfer.transactionId, 30_000);
    expect(await senderOf(s.sending, claimed)).toBe(s.router);

    // Asked again after it landed: the existing job's hash, still one job and one fulfill.
    const again = await ask(request);
    expect(again.data).toEqual(first.data);
    await r.idle(RECEIVING);
    expect(await relayJobs()).toEqual([RELAY_JOB(transfer)]);
    expect(await transferEvents(s.receiving, "fulfilled", transfer.transactionId)).toHaveLength(1);
    const relayed = auctionLogs.lines().filter((l) => l.at === "auction.metatx" && l.outcome === "relayed");
    expect(relayed).toHaveLength(3);
    expect(relayed[2].existing).toBe(true);
  }, 120_000);

  it("the submitter re-checks a relay job itself: a signature not the user's fails for good, a completed side is a no-op", async () => {
    const url = new URL(s.redisUrl);
    const queue = new Queue(txQueueName(RECEIVING), {
      connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
      prefix: r.prefix,
    });
    try {
      const signed = (await sdkRequest(receiver, "0")) as { data: { signature: string } };
      const stranger = (await sdkRequest(receiver, "0", Wallet.createRandom())) as { data: { signature: string } };
      const job = (signature: string): RelayFulfillJobData => ({
        chainId: RECEIVING,
        txData: receiver,
        relayerFee: "0",
        signature,
        callData: "0x",
      });
      await queue.add(TX_JOB.relayFulfill, job(stranger.data.signature), {
        jobId: "relay-check-stranger",
        attempts: 3,
      });
      await queue.add(TX_JOB.relayFulfill, job(signed.data.signature), { jobId: "relay-check-completed", attempts: 3 });
      const failed = await waitFor(
        "stranger job failed",
        async () => (await queue.getJob("relay-check-stranger"))?.failedReason || undefined,
      );
      expect(failed).toMatch(/^INVALID_USER_SIGNATURE/);
      expect((await queue.getJob("relay-check-stranger"))?.attemptsMade).toBe(1);
      const done = await waitFor(
        "completed job",
        async () => (await queue.getJob("relay-check-completed"))?.returnvalue ?? undefined,
      );
      expect(done).toMatchObject({ noop: true });
      expect(await transferEvents(s.receiving, "fulfilled", transfer.transactionId)).toHaveLength(1);
    } finally {
      await queue.close();
    }
  }, 60_000);
  it("a relay job the submitter finds not prepared on chain waits while our own prepare of that side is in flight (RELAY_RECEIVER_PENDING, retried), then fails for good", async () => {
    const url = new URL(s.redisUrl);
    const queue = new Queue(txQueueName(RECEIVING), {
      connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
      prefix: r.prefix,
    });
    // A transfer never prepared on 1338, with a prepare-receiver transaction of ours recorded as "sending" for it.
    const unprepared = { ...receiver, transactionId: hexlify(randomBytes(32)) };
    const key = transferKey(unprepared.transactionId, unprepared.user);
    const prepareRecord = txRecordKey(r.prefix, RECEIVING, txJobId(TX_JOB.prepareReceiver, key));
    await r.redis.hset(prepareRecord, "record", JSON.stringify({ status: "sending" }));
    try {
      const signed = (await sdkRequest(unprepared, "0")) as { data: { signature: string } };
      const job: RelayFulfillJobData = {
        chainId: RECEIVING,
        txData: unprepared,
        relayerFee: "0",
        signature: signed.data.signature,
        callData: "0x",
      };
      const jobId = "relay-check-pending";
      // Two attempts 1 s apart instead of the shipped 8 with exponential backoff: enough to see the retry, then the end.
      await queue.add(TX_JOB.relayFulfill, job, { jobId, attempts: 2, backoff: { type: "fixed", delay: 1_000 } });
      const retried = await waitFor("first attempt retried", async () =>
        r.logs.lines().find((l) => l.at === "submitter.job" && l.jobId === jobId && l.outcome === "retry"),
      );
      expect(retried.code).toBe("RELAY_RECEIVER_PENDING");
      // Our prepare is over (no transaction any more): the chain's "not prepared" is now the answer.
      await r.redis.del(prepareRecord);
      const failed = await waitFor("second attempt failed", async () => {
        const found = await queue.getJob(jobId);
        return (await found?.isFailed()) ? found?.failedReason : undefined;
      });
      expect(failed).toMatch(/^RECEIVER_NOT_PREPARED/);
      expect((await queue.getJob(jobId))?.attemptsMade).toBe(2);
    } finally {
      await r.redis.del(prepareRecord);
      await queue.close();
    }
  }, 60_000);

  it("relays a fulfill whose receiving prepare is mined but not stored by the poller yet, proven from the chain; refuses a transfer not ours at once with no RPC, txData differing from the chain, and a stranger's signature", async () => {
    const rpc = await startCountingRpc(s.receiving.anvil.url);
    try {
      auction = await startRelayAuction(true, {}, rpc.url);
      // 1338's poller stopped: the router's receiving prepare is mined but never stored, the race the SDK 0.1.42
      // loses at the default 1 s poller interval (its request comes ~0.4 s after the prepare), made certain here.
      await r.stopPoller(RECEIVING);
      const late = await userPrepare(s);
      const lateReceiver = (await waitForEvent(s.receiving, "prepared", late.transactionId, 30_000)).txData;
      const store = createTransferStore(r.redis, r.prefix);
      expect(await store.get(RECEIVING, late.transactionId, late.txData.user)).toBeUndefined();

      // Not ours (no decision, no prepare-receiver job): refused on the first try, with no chain read and no job.
      const readsBefore = rpc.variantReads();
      const strangerId = hexlify(randomBytes(32));
      const notOurs = await ask(await sdkRequest({ ...lateReceiver, transactionId: strangerId }, "0"));
      expect(notOurs.error).toMatchObject({ type: "UnknownTransferError", context: { code: "UNKNOWN_TRANSFER" } });
      expect(rpc.variantReads()).toBe(readsBefore);
      const notOursLine = auctionLogs.lines().find((l) => l.at === "auction.metatx" && l.transactionId === strangerId);
      expect(notOursLine).toMatchObject({ outcome: "refused", attempts: 1 });

      // Ours, but the amount differs from the receiving side on chain: read from the chain, refused.
      const tampered = await ask(
        await sdkRequest({ ...lateReceiver, amount: (BigInt(lateReceiver.amount) - 1n).toString() }, "0"),
      );
      expect(tampered.error).toMatchObject({ type: "TransferMismatchError", context: { code: "TRANSFER_MISMATCH" } });
      expect(rpc.variantReads()).toBeGreaterThan(readsBefore);

      const stranger = await ask(await sdkRequest(lateReceiver, "0", Wallet.createRandom()));
      expect(stranger.error?.type).toBe("InvalidFulfillSignatureError");

      // The genuine request: the transfer check passes from the chain (the fee probe is refused only for its fee).
      const probe = await ask(await sdkRequest(lateReceiver, "1"));
      expect(probe.error?.type).toBe("NotEnoughRelayerFeeError");
      const relayerFee = BigInt(probe.error?.context.expectedFee as string) * 2n;
      // The auction's provider does not show the prepare yet: the router retries by itself (the SDK asks once)
      // and relays once the chain shows it. Released after two reads, i.e. after at least one retry.
      rpc.hideVariants(true);
      const hiddenFrom = rpc.variantReads();
      const asked = ask(await sdkRequest(lateReceiver, relayerFee.toString()));
      await waitFor("a retried chain read", async () => (rpc.variantReads() >= hiddenFrom + 2 ? true : undefined));
      rpc.hideVariants(false);
      const relayed = await asked;
      expect(relayed.error).toBeNull();
      expect(relayed.data).toEqual({ transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), chainId: RECEIVING });
      const fulfilled = await waitForEvent(s.receiving, "fulfilled", late.transactionId, 30_000);
      expect(fulfilled.transactionHash).toBe(relayed.data?.transactionHash);
      expect(await senderOf(s.receiving, fulfilled)).toBe(s.router);
      expect(await store.get(RECEIVING, late.transactionId, late.txData.user)).toBeUndefined();
      const line = auctionLogs
        .lines()
        .find((l) => l.at === "auction.metatx" && l.outcome === "relayed" && l.transactionId === late.transactionId);
      expect(line).toMatchObject({ transferSource: "chain", existing: false });
      expect(line?.attempts).toBeGreaterThanOrEqual(2);

      // The poller back: it stores the fulfill, and the router claims the sending side.
      await r.startPoller(RECEIVING);
      const claimed = await waitForEvent(s.sending, "fulfilled", late.transactionId, 30_000);
      expect(await senderOf(s.sending, claimed)).toBe(s.router);
    } finally {
      await auction?.stop();
      auction = undefined;
      await rpc.close();
    }
  }, 150_000);
});
