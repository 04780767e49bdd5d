import { Wallet } from "ethers";
import type { NatsConnection } from "nats";
import { createNatsMessaging, type MessagingRequest } from "../../shared/messaging";
import { captureLogs } from "../harness/logs";

/**
 * A stand-in for nats.js's write path (protocol.js `sendCommand`): a publish into an empty buffer queues the socket
 * write on a microtask; a buffer that reaches 32 KiB is written at once, inline, after the publish that crossed it.
 * Records each socket write as the list of bodies it carried.
 */
function fakeConnection(): { nc: NatsConnection; writes: string[][]; written: () => string[] } {
  const LIMIT = 32 * 1024;
  const writes: string[][] = [];
  let buffer: string[] = [];
  let bytes = 0;
  const write = (): void => {
    if (buffer.length === 0) return;
    writes.push(buffer);
    buffer = [];
    bytes = 0;
  };
  const nc = {
    publish: (subject: string, body: string) => {
      const empty = buffer.length === 0;
      buffer.push(body);
      bytes += subject.length + body.length + 32;
      if (empty) queueMicrotask(write);
      else if (bytes >= LIMIT) write();
    },
    isClosed: () => false,
    flush: async () => undefined,
  } as unknown as NatsConnection;
  return { nc, writes, written: () => writes.flat() };
}

describe("messaging outbox (outbox.ts)", () => {
  const router = Wallet.createRandom().address;
  const request = (i: number): MessagingRequest => ({
    subject: `${router}.${router}.auction.request`,
    from: router,
    topic: "auction",
    responseInbox: `_INBOX.${i}`,
    data: {},
    receivedAtMs: 0,
    sizeBytes: 0,
  });

  it("hands a turn's publishes over in one write, in order; a notice stays in the write of the answer before it", async () => {
    const { nc, writes, written } = fakeConnection();
    const messaging = createNatsMessaging({
      nc,
      address: router,
      logger: captureLogs().logger,
      isConnected: () => true,
    });
    // 60 answers of ~1 KiB, each with its notice, in one synchronous turn: ~65 KiB, over nats.js's inline limit.
    const filler = "x".repeat(1_000);
    for (let i = 0; i < 60; i += 1) {
      messaging.respond(request(i), { filler, i });
      messaging.notify("auction-settled", `me ${i}`);
    }
    expect(writes).toHaveLength(0); // nothing before the turn ends
    await messaging.flush();
    const bodies = written();
    expect(bodies).toHaveLength(120);
    bodies.forEach((body, k) => {
      const i = Math.floor(k / 2);
      expect(body).toContain(k % 2 === 0 ? `"i":${i}` : `me ${i}`);
    });
    // Several writes (one would exceed the limit), each under it, and none starts with a notice.
    expect(writes.length).toBeGreaterThan(1);
    for (const w of writes) {
      expect(w[0]).not.toMatch(/^me /);
      expect(w.reduce((n, b) => n + b.length, 0)).toBeLessThan(32 * 1024);
    }
  });

  it("publishes of separate turns still go out, without an explicit flush", async () => {
    const { nc, written } = fakeConnection();
    const messaging = createNatsMessaging({
      nc,
      address: router,
      logger: captureLogs().logger,
      isConnected: () => true,
    });
    messaging.respond(request(1), { i: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    messaging.respond(request(2), { i: 2 });
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.resolve(); // the fake's write microtask
    expect(written().map((b) => (JSON.parse(b) as { data: { i: number } }).data.i)).toEqual([1, 2]);
  });
});
