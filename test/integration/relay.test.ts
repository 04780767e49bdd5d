import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Wallet, ZeroAddress, getBytes, hexlify, parseEther, randomBytes } from "ethers";
import { connect, type NatsConnection } from "nats";
import type { AuthServer } from "../../services/messaging-auth/app";
import { startAuction, type RunningAuction } from "../../services/auction/start-auction";
import { loadConfig } from "../../shared/config";
import type { TransactionData } from "../../shared/protocol/types";
import { fulfillPayloadHash } from "../../shared/protocol/user-signatures";
import { TX_JOB, transferKey, txJobId, txQueueName, type RelayFulfillJobData } from "../../shared/queues";
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
import { captureLogs, waitFor } from "./submitter-fixture";

/**
 * Meta-transaction relaying end to end (docs/relaying.md): the router's pollers and submitters for 1337 and
 * 1338 run in this process (e2e fixture), the auction process runs through the real startAuction on a real
 * nats-server, and the test talks to it only as the SDK does: raw NATS, the exact metatx.request envelope of
 * REAL_PARTS §3 on `<M>.<M>.metatx.request`, answers read on `<M>.*.metatx.response`.
 */
interface Reply {
  readonly subject: string;
  readonly data: { transactionHash?: string; chainId?: number } | null;
  readonly error: { type: string; message: string; context: Record<string, unknown> } | null;
}

const RELAY_JOB = (t: UserTransfer): string =>
  txJobId(TX_JOB.relayFulfill, transferKey(t.transactionId, t.txData.user));

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
    r = await startRouter(s, { admin: false });
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
    expect(replies.has(dataless)).toBe(false);
    expect(auctionLogs.lines().some((l) => l.at === "auction.metatx" && l.outcome === "dropped")).toBe(true);

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
});
