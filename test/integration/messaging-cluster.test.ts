import { randomUUID } from "node:crypto";
import { startNatsCluster, type NatsCluster } from "../harness/nats";
import {
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
import { waitFor } from "../harness/wait";
import { randomMnemonic } from "../harness/mnemonic";

/**
 * `messagingUrl` listing a cluster of three real nats-servers: two auction instances of one router (as on two
 * hosts) share the signer's queue group across servers, so each request gets one bid. SIGKILLing the server
 * one instance is connected to makes it fail over to another server, log in again (docs/protocol.md#login) and
 * keep bidding, still one bid per request.
 */
describe("messaging over a NATS cluster", () => {
  let s: AuctionStack;
  let cluster: NatsCluster;
  let onCluster: AuctionStack;
  let client: Client;
  const started: AuctionInstance[] = [];

  beforeAll(async () => {
    s = await startAuctionStack();
    cluster = await startNatsCluster(3);
    onCluster = { ...s, natsUrl: cluster.messagingUrl };
    client = await startClient(onCluster);
  }, 120_000);

  afterAll(async () => {
    for (const instance of started) await instance.running.stop().catch(() => undefined);
    await client?.close().catch(() => undefined);
    await cluster?.stop();
    await s?.stop();
  });

  it("keeps one bid per request across servers, and across a server's death with a fresh login", async () => {
    const prefix = `cluster-${randomUUID().slice(0, 8)}`;
    await writeBalances(s, prefix);
    const config = auctionConfig(onCluster, { prefix, mnemonic: randomMnemonic() });
    expect(config.messagingUrl.split(",")).toHaveLength(3);
    const a = await startInstance({ config });
    const b = await startInstance({ config });
    started.push(a, b);
    const signer = a.running.signerAddress;
    const serverOf = (instance: AuctionInstance): string =>
      String(instance.logs.find("messaging.connect").at(-1)?.server ?? "");

    const ours = (inbox: string): unknown[] => client.responsesTo(inbox).filter((r) => r.responder === signer);
    const bidRound = async (n: number): Promise<string[]> => {
      const inboxes = Array.from({ length: n }, () => client.request(sdkPayload(s)));
      await waitFor(`${n} bids`, () => (inboxes.every((i) => ours(i).length >= 1) ? true : undefined), 20_000);
      await client.messaging.flush();
      return inboxes;
    };

    // Before: each request answered once by the group, wherever its members are connected.
    for (const inbox of await bidRound(12)) expect(ours(inbox)).toHaveLength(1);

    // Kill the server instance a is on.
    const killedServer = serverOf(a);
    const node = cluster.nodes.find((n) => killedServer.endsWith(`:${n.port}`));
    if (!node) throw new Error(`instance a is on ${killedServer}, no node of the cluster`);
    const loginsBefore = a.logs.find("messaging.auth", "messaging token refreshed").length;
    node.kill();

    // a reconnects to another server of the list, and a login happens after the disconnect.
    const reconnected = await waitFor(
      "instance a reconnected to another server",
      () => a.logs.find("messaging.status", "messaging reconnected").at(-1),
      30_000,
    );
    expect(String(reconnected.server)).not.toBe(killedServer);
    const lines = a.logs.lines();
    const disconnectAt = lines.findIndex((l) => l.message === "messaging disconnected; reconnecting");
    const loginAfter = lines.findIndex((l, i) => i > disconnectAt && l.message === "messaging token refreshed");
    // Not "login before reconnect": failing over to a live server can be faster than the login (docs/messaging.md).
    expect(disconnectAt).toBeGreaterThanOrEqual(0);
    expect(loginAfter).toBeGreaterThan(disconnectAt);
    expect(a.logs.find("messaging.auth", "messaging token refreshed").length).toBeGreaterThan(loginsBefore);

    // After: bids continue, still one per request. The client itself may have been on the killed server.
    await waitFor("the client connected", () => (client.messaging.isConnected() ? true : undefined), 30_000);
    const after = await bidRound(12);
    for (const inbox of after) expect(ours(inbox)).toHaveLength(1);
    const bidsBy = (instance: AuctionInstance): number => instance.outcomes().filter((l) => l.result === "bid").length;
    expect(bidsBy(a) + bidsBy(b)).toBe(24);
  }, 120_000);
});
