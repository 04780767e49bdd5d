import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import type { AuthServer } from "../../services/messaging-auth/app";
import {
  connectMessaging,
  type Messaging,
  type MessagingAuthSigner,
  type MessagingResponse,
} from "../../shared/messaging";
import { startAuthServer } from "../harness/auth-server";
import { captureLogs } from "../harness/logs";
import { spawnManaged, tcpExchange, waitForReady, type ManagedProcess } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import { natsServerBinary } from "../harness/nats";
import { waitFor } from "../harness/wait";

/** The `jwt` of every CONNECT a client named `name` sent, in order. */
function connectJwts(logFile: string, name: string): string[] {
  return readFileSync(logFile, "utf8")
    .split("\n")
    .filter((line) => line.includes("<<- [CONNECT ") && line.includes(`"name":"${name}"`))
    .map((line) => /"jwt":"([^"]*)"/.exec(line)?.[1] ?? "");
}

function walletSigner(): MessagingAuthSigner & { address: string } {
  const wallet = Wallet.createRandom();
  return { address: wallet.address, getAddress: async () => wallet.address, signMessage: (m) => wallet.signMessage(m) };
}

/**
 * A nats-server on a given port (the restart must come back where the clients reconnect to), tracing
 * protocol lines into `logFile` so the test can read the `jwt` each client's CONNECT carried.
 */
async function natsOnPort(port: number, logFile: string): Promise<ManagedProcess> {
  const proc = spawnManaged({
    name: `nats-server:${port}`,
    command: natsServerBinary(),
    args: ["-a", "127.0.0.1", "-p", String(port), "-DV", "-l", logFile],
  });
  await waitForReady(proc, async (timeoutMs) => {
    const reply = await tcpExchange({
      port,
      send: "CONNECT {}\r\nPING\r\n",
      done: (r) => r.includes("PONG\r\n") || r.includes("-ERR"),
      timeoutMs,
    });
    return reply.includes("PONG\r\n");
  });
  return proc;
}

describe("messaging reconnect", () => {
  let auth: AuthServer;
  let nats: ManagedProcess | undefined;
  const open: Messaging[] = [];
  const dir = mkdtempSync(join(tmpdir(), "messaging-reconnect-"));

  beforeAll(async () => {
    auth = await startAuthServer();
  });
  afterAll(async () => {
    await Promise.all(open.map((m) => m.close()));
    await nats?.stop();
    await auth.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("re-authenticates after the nats-server restarts on the same port, and serving resumes", async () => {
    const port = await getFreePort();
    const url = `nats://127.0.0.1:${port}`;
    const [firstLog, secondLog] = [join(dir, "first.log"), join(dir, "second.log")];
    const first = await natsOnPort(port, firstLog);
    const routerSigner = walletSigner();
    const clientSigner = walletSigner();
    const routerLogs = captureLogs();
    const router = await connectMessaging({
      servers: url,
      authUrl: auth.url,
      signer: routerSigner,
      logger: routerLogs.logger,
      reconnectWaitMs: 100,
      name: "reconnect-router",
    });
    const client = await connectMessaging({
      servers: url,
      authUrl: auth.url,
      signer: clientSigner,
      logger: captureLogs().logger,
      reconnectWaitMs: 100,
    });
    open.push(router, client);
    router.serve("auction", (req) => router.respond(req, { round: (req.data as { round: number }).round }), {
      queueGroup: "g",
    });
    const responses = new Map<string, MessagingResponse>();
    client.onResponse("auction", (r) => responses.set(r.responseInbox ?? "", r));
    await Promise.all([router.flush(), client.flush()]);

    const roundTrip = async (round: number): Promise<MessagingResponse> => {
      const inbox = `_INBOX.${randomUUID()}`;
      client.request("auction", { round }, inbox);
      return waitFor(`round ${round} response`, () => responses.get(inbox));
    };
    expect((await roundTrip(1)).data).toEqual({ round: 1 });
    const tokensBefore = auth.stats().tokensIssued;

    await first.stop();
    await waitFor("router sees the disconnect", () => !router.isConnected());
    // The new server starts once the router's login after the disconnect is done: a server back sooner is given the
    // previous token while it is still valid (the NATS authenticator cannot wait for a login), which CI met once.
    await waitFor("the router's login after the disconnect", () =>
      routerLogs.find("messaging.auth", "messaging token refreshed").length > 0 ? true : undefined,
    );
    nats = await natsOnPort(port, secondLog);

    await waitFor("both reconnected", () => router.isConnected() && client.isConnected());
    // Each client logged in again (the second login of the router and of the client).
    await waitFor("fresh tokens", () => auth.stats().tokensIssued >= tokensBefore + 2);
    expect(routerLogs.find("messaging.status", "messaging disconnected")).not.toHaveLength(0);
    expect(routerLogs.find("messaging.status", "messaging reconnected")).not.toHaveLength(0);
    expect(routerLogs.find("messaging.auth", "messaging token refreshed")).not.toHaveLength(0);
    // The CONNECT after the restart carried a token from the new login, not the first one.
    const [firstJwt] = connectJwts(firstLog, "reconnect-router");
    const afterRestart = connectJwts(secondLog, "reconnect-router");
    expect(firstJwt && auth.verifyToken(firstJwt)).toBe(routerSigner.address);
    expect(afterRestart).toHaveLength(1);
    expect(afterRestart[0]).not.toBe(firstJwt);
    expect(auth.verifyToken(afterRestart[0] ?? "")).toBe(routerSigner.address);

    // Subscriptions are replayed on reconnect: the flushes prove the server has them again.
    await Promise.all([router.flush(), client.flush()]);
    expect((await roundTrip(2)).data).toEqual({ round: 2 });
  });
});
