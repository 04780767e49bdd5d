import { randomUUID } from "node:crypto";
import { Wallet } from "ethers";
import { connect, type NatsConnection } from "nats";
import type { AuthServer } from "../../services/messaging-auth/app";
import {
  connectMessaging,
  encodeEnvelope,
  MessagingAuthError,
  routerQueueGroup,
  MessagingUnavailableError,
  type Messaging,
  type MessagingAuthSigner,
  type MessagingRequest,
  type MessagingResponse,
} from "../../shared/messaging";
import { startAuthServer } from "../harness/auth-server";
import { captureLogs, type LogCapture } from "../harness/logs";
import { getFreePort } from "../harness/free-port";
import { startNats, type NatsServer } from "../harness/nats";
import { waitFor } from "../harness/wait";

function walletSigner(): MessagingAuthSigner & { address: string } {
  const wallet = Wallet.createRandom();
  return { address: wallet.address, getAddress: async () => wallet.address, signMessage: (m) => wallet.signMessage(m) };
}

const inbox = (): string => `_INBOX.${randomUUID()}`;

/** Collects a client's responses by inbox. */
function collect(messaging: Messaging, topic: "auction" | "metatx" | "status"): Map<string, MessagingResponse> {
  const byInbox = new Map<string, MessagingResponse>();
  messaging.onResponse(topic, (r) => {
    byInbox.set(r.responseInbox ?? "", r);
  });
  return byInbox;
}

describe("messaging over a real nats-server with the local auth service", () => {
  let nats: NatsServer;
  let auth: AuthServer;
  const open: Messaging[] = [];
  const raw: NatsConnection[] = [];

  const connectAs = async (
    signer: MessagingAuthSigner,
    logs: LogCapture,
    extra: { name?: string; servers?: string } = {},
  ): Promise<Messaging> => {
    const messaging = await connectMessaging({
      servers: extra.servers ?? nats.url,
      authUrl: auth.url,
      signer,
      logger: logs.logger,
      name: extra.name,
      reconnectWaitMs: 100,
    });
    open.push(messaging);
    return messaging;
  };

  beforeAll(async () => {
    [nats, auth] = await Promise.all([startNats(), startAuthServer()]);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((m) => m.close()));
    await Promise.all(raw.splice(0).map((nc) => nc.close()));
  });
  afterAll(async () => {
    await auth.close();
    await nats.stop();
  });

  it("logs in at the auth server before connecting, splitting a comma-separated server list", async () => {
    const signer = walletSigner();
    const logs = captureLogs();
    const before = auth.stats();
    const deadPort = await getFreePort();
    const messaging = await connectAs(signer, logs, { servers: `nats://127.0.0.1:${deadPort}, ${nats.url}` });
    expect(messaging.address).toBe(signer.address);
    expect(messaging.isConnected()).toBe(true);
    expect(auth.stats().nonceRequests).toBe(before.nonceRequests + 1);
    expect(auth.stats().tokensIssued).toBe(before.tokensIssued + 1);
    expect(logs.find("messaging.connect", "messaging connected")).toHaveLength(1);
  });

  it("refuses to connect when the login fails, naming the step", async () => {
    const logs = captureLogs();
    const err = await connectMessaging({
      servers: nats.url,
      authUrl: `http://127.0.0.1:${await getFreePort()}`,
      signer: walletSigner(),
      logger: logs.logger,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingAuthError);
    expect((err as MessagingAuthError).step).toBe("nonce");
  });

  it("refuses to connect when no nats-server answers, after logging in", async () => {
    const logs = captureLogs();
    const err = await connectMessaging({
      servers: `nats://127.0.0.1:${await getFreePort()}`,
      authUrl: auth.url,
      signer: walletSigner(),
      logger: logs.logger,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingUnavailableError);
    expect((err as MessagingUnavailableError).code).toBe("MESSAGING_UNAVAILABLE");
  });

  it("round trip: a client's request reaches serve(), respond() goes to <from>.<router>.<topic>.response with the inbox", async () => {
    const routerSigner = walletSigner();
    const clientSigner = walletSigner();
    const router = await connectAs(routerSigner, captureLogs());
    const client = await connectAs(clientSigner, captureLogs());
    const seen: MessagingRequest[] = [];
    router.serve("auction", (req) => {
      seen.push(req);
      router.respond(req, { echo: req.data, dryRunSig: undefined });
    });
    router.serve("status", (req) =>
      router.respondError(req, { message: "nope", type: "StatusUnavailable", context: { why: "test" } }),
    );
    const responses = collect(client, "auction");
    const statusResponses = collect(client, "status");
    await Promise.all([router.flush(), client.flush()]);

    const auctionInbox = inbox();
    const statusInbox = inbox();
    client.request("auction", { amount: "10", dryRun: true }, auctionInbox);
    client.request("status", { requestee: routerSigner.address }, statusInbox);

    const response = await waitFor("auction response", () => responses.get(auctionInbox));
    expect(response).toMatchObject({
      subject: `${clientSigner.address}.${routerSigner.address}.auction.response`,
      responder: routerSigner.address,
      topic: "auction",
      responseInbox: auctionInbox,
      data: { echo: { amount: "10", dryRun: true }, dryRunSig: null },
      error: null,
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      subject: `${clientSigner.address}.${clientSigner.address}.auction.request`,
      from: clientSigner.address,
      topic: "auction",
      responseInbox: auctionInbox,
    });
    expect(seen[0]?.sizeBytes).toBeGreaterThan(0);

    const failed = await waitFor("status error response", () => statusResponses.get(statusInbox));
    expect(failed).toMatchObject({
      data: null,
      error: { message: "nope", type: "StatusUnavailable", context: { why: "test" } },
    });
  });

  it("queue group: two instances of one router signer share the requests, each answered exactly once", async () => {
    const routerSigner = walletSigner();
    const clientSigner = walletSigner();
    const handledBy = new Map<string, string[]>();
    const serveAs = async (name: string): Promise<void> => {
      const instance = await connectAs(routerSigner, captureLogs(), { name });
      instance.serve(
        "auction",
        async (req) => {
          handledBy.set(req.responseInbox, [...(handledBy.get(req.responseInbox) ?? []), name]);
          await new Promise((r) => setImmediate(r));
          instance.respond(req, { by: name });
        },
        { queueGroup: routerQueueGroup(routerSigner.address) },
      );
      await instance.flush();
    };
    await serveAs("a");
    await serveAs("b");
    const client = await connectAs(clientSigner, captureLogs());
    const responses = collect(client, "auction");
    await client.flush();

    const inboxes = Array.from({ length: 50 }, inbox);
    for (const i of inboxes) client.request("auction", { n: i }, i);
    await waitFor("50 responses", () => responses.size === 50);
    // The next round trip proves no late duplicate is still on its way.
    const marker = inbox();
    client.request("auction", { marker: true }, marker);
    await waitFor("marker response", () => responses.get(marker));

    for (const i of inboxes) expect(handledBy.get(i)).toHaveLength(1);
    const perInstance = { a: 0, b: 0 };
    for (const [, names] of handledBy) for (const n of names) perInstance[n as "a" | "b"] += 1;
    expect(perInstance.a + perInstance.b).toBe(51);
    // 50 requests spread randomly: both members take part (all on one has probability 2^-50).
    expect(perInstance.a).toBeGreaterThan(0);
    expect(perInstance.b).toBeGreaterThan(0);
  });

  it("drops malformed messages (logged once per reason), survives handler throws, and keeps serving", async () => {
    const routerSigner = walletSigner();
    const clientSigner = walletSigner();
    const logs = captureLogs();
    const router = await connectAs(routerSigner, logs);
    const handled: unknown[] = [];
    router.serve("auction", async (req) => {
      handled.push(req.data);
      if ((req.data as { boom?: string } | null)?.boom === "sync") throw new Error("handler exploded");
      await Promise.resolve();
      if ((req.data as { boom?: string } | null)?.boom === "async") throw new Error("async handler exploded");
      router.respond(req, { ok: true });
    });
    await router.flush();
    const client = await connectAs(clientSigner, captureLogs());
    const responses = collect(client, "auction");
    await client.flush();

    const nc = await connect({ servers: nats.url });
    raw.push(nc);
    const me = clientSigner.address;
    const requestSubject = `${me}.${me}.auction.request`;
    const valid = (data: unknown): string => encodeEnvelope({ responseInbox: inbox(), data });
    nc.publish(requestSubject, "{not json");
    nc.publish(requestSubject, "{not json either");
    nc.publish(requestSubject, new Uint8Array(1_000_000).fill(0x7b));
    nc.publish(requestSubject, JSON.stringify({ responseInbox: inbox(), data: {}, version: "1.0.0", error: null }));
    nc.publish(requestSubject, JSON.stringify({ data: {}, version: "0.0.1", error: null }));
    nc.publish(requestSubject, JSON.stringify([1, 2, 3]));
    nc.publish(`${me.toLowerCase()}.${me.toLowerCase()}.auction.request`, valid({ lowercase: true }));
    await nc.flush();
    client.request("auction", { boom: "sync" }, inbox());
    client.request("auction", { boom: "async" }, inbox());
    const last = inbox();
    client.request("auction", { fine: true }, last);

    await waitFor("the valid request's response", () => responses.get(last));
    // Only the three well-formed requests reached the handler, in order.
    expect(handled).toEqual([{ boom: "sync" }, { boom: "async" }, { fine: true }]);
    const drops = logs.find("messaging.drop");
    const reasons = drops.map((l) => l.reason).sort();
    // Two bad-JSON bodies, one log line: the repeat is throttled.
    expect(reasons).toEqual(["bad_inbox", "bad_subject", "bad_version", "not_object", "not_utf8_json", "too_large"]);
    expect(drops.filter((l) => l.level !== "error" || l.topic !== "auction")).toEqual([]);
    const handlerErrors = logs.find("messaging.handler").map((l) => l.error);
    expect(handlerErrors).toEqual(["handler exploded", "async handler exploded"]);
    expect(router.isConnected()).toBe(true);
  });

  it("close() drains in-flight handlers, is idempotent, and refuses new subscriptions", async () => {
    const router = await connectAs(walletSigner(), captureLogs());
    const client = await connectAs(walletSigner(), captureLogs());
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    router.serve("metatx", async (req) => {
      started = true;
      await gate;
      router.respond(req, { transactionHash: "0x01", chainId: 1337 });
    });
    const responses = collect(client, "metatx");
    await Promise.all([router.flush(), client.flush()]);
    const i = inbox();
    client.request("metatx", { type: "Fulfill" }, i);
    await waitFor("handler started", () => started);

    const closing = router.close();
    expect(router.close()).toBe(closing);
    expect(router.isConnected()).toBe(false);
    release();
    await closing;
    // The handler that was running when close() began still got its answer out.
    await waitFor("response of the drained handler", () => responses.get(i));
    expect(() => router.serve("auction", () => undefined)).toThrow(/closed/);
    await router.close();
  });
});
