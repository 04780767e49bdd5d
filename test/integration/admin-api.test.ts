import type { Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { gzipSync } from "node:zlib";
import IORedis from "ioredis";
import { Queue, QueueEvents, UnrecoverableError, Worker } from "bullmq";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { createLogger, type Logger } from "../../shared/logging/create-logger";
import { TX_JOB, producerConnection, txJobId, txQueueName, workerConnection } from "../../shared/queues";
import { createApp } from "../../services/admin/app";
import { closeServer, isLoopbackHost, listen } from "../../services/admin/listen";
import { createRemoveLiquidityOperation } from "../../services/admin/operations/remove-liquidity";
import type { AdminOperations, CancelSenderRequest, RemoveLiquidityRequest } from "../../services/admin/types";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/wait";

const ADMIN_TOKEN = "admin-token-for-tests-0123456789abcdef";
const WRONG_TOKEN = "wrong-token-never-logged-6d1f0c";
const MNEMONIC = "test test test test test test test test test test test junk";
const SIGNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const CHAIN_ID = 1337;
const TM_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const ASSET_LOWER = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const ASSET = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
const RECIPIENT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const TX_HASH = `0x${"ab".repeat(32)}`;
const TRANSACTION_ID = `0x${"12".repeat(32)}`;

function testConfig(redisUrl = "redis://127.0.0.1:1"): RouterConfig {
  const chain = { providers: ["http://127.0.0.1:1"], transactionManagerAddress: TM_ADDRESS };
  return loadConfig(
    {
      adminToken: ADMIN_TOKEN,
      mnemonic: MNEMONIC,
      chainConfig: { "1": chain, [String(CHAIN_ID)]: chain },
      swapPools: [],
      redisUrl,
    },
    {},
    { deployments: new Map() },
  ).config;
}

// ---- a recording logger and the app on 127.0.0.1:0 ------------------------------------------------------

interface LogRecorder {
  readonly logger: Logger;
  lines(): Array<Record<string, unknown>>;
  text(): string;
}

function recordLogs(): LogRecorder {
  let raw = "";
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      raw += chunk.toString();
      callback();
    },
  });
  const logger = createLogger({ level: "trace", service: "admin", secrets: [ADMIN_TOKEN, MNEMONIC], stream });
  return {
    logger,
    text: () => raw,
    lines: () =>
      raw
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

interface RunningApp {
  readonly baseUrl: string;
  readonly logs: LogRecorder;
  readonly calls: { removeLiquidity: RemoveLiquidityRequest[]; cancelSender: CancelSenderRequest[] };
  /** Request ids whose response closed, once every 'close' listener of the response (the access log's) ran. */
  readonly closed: ReadonlySet<string>;
  close(): Promise<void>;
}

async function startApp(operations: Partial<AdminOperations> = {}, config = testConfig()): Promise<RunningApp> {
  const logs = recordLogs();
  const calls: RunningApp["calls"] = { removeLiquidity: [], cancelSender: [] };
  const app = createApp({
    config,
    logger: logs.logger,
    signerAddress: SIGNER,
    operations: {
      removeLiquidity: async (params, ctx) => {
        calls.removeLiquidity.push(params);
        return operations.removeLiquidity ? operations.removeLiquidity(params, ctx) : { transactionHash: TX_HASH };
      },
      cancelSender: async (params, ctx) => {
        calls.cancelSender.push(params);
        return operations.cancelSender ? operations.cancelSender(params, ctx) : { transactionHash: TX_HASH };
      },
    },
  });
  const server: Server = await listen(app, "127.0.0.1", 0);
  const closed = new Set<string>();
  server.on("request", (_req, res: ServerResponse) =>
    res.once("close", () => setImmediate(() => closed.add(String(res.getHeader("x-request-id"))))),
  );
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, logs, calls, closed, close: () => closeServer(server) };
}

// ---- requests -------------------------------------------------------------------------------------------

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  json(): Record<string, unknown>;
}

async function request(
  url: string,
  init: { method?: string; body?: string; contentType?: string; requestId?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (init.contentType !== undefined) {
    headers["content-type"] = init.contentType;
  }
  if (init.requestId !== undefined) {
    headers["x-request-id"] = init.requestId;
  }
  const res = await fetch(url, { method: init.method ?? "GET", headers, body: init.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

function post(url: string, body: unknown, requestId?: string): Promise<Reply> {
  return request(url, { method: "POST", body: JSON.stringify(body), contentType: "application/json", requestId });
}

function removeBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    adminToken: ADMIN_TOKEN,
    chainId: String(CHAIN_ID),
    assetId: ASSET_LOWER,
    amount: "1000",
    recipientAddress: RECIPIENT,
    ...overrides,
  };
}

function cancelBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    adminToken: ADMIN_TOKEN,
    senderChainId: CHAIN_ID,
    transactionId: TRANSACTION_ID,
    user: RECIPIENT,
    ...overrides,
  };
}

/**
 * The request's access lines once its response closed: the access log writes on the response's 'finish' or
 * 'close', whichever comes first (both can trail the client's read), so a second line would be there by then.
 */
async function accessLines(app: RunningApp, requestId: string): Promise<Array<Record<string, unknown>>> {
  await waitFor(`the response to ${requestId} closed`, () => app.closed.has(requestId), 5_000);
  return app.logs.lines().filter((l) => l.at === "admin.request" && l.requestId === requestId);
}

function expectErrorBody(reply: Reply, status: number, error: string): Record<string, unknown> {
  expect(reply.status).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  const body = reply.json();
  expect(body.error).toBe(error);
  expect(typeof body.message).toBe("string");
  expect(body.requestId).toBe(reply.headers.get("x-request-id"));
  expect(reply.text).not.toMatch(/<html|<pre|\bat .*\.(js|ts):\d+/i);
  return body;
}

// ---- HTTP behaviour with fake operations -----------------------------------------------------------------

describe("admin API (HTTP behaviour)", () => {
  let app: RunningApp;

  beforeEach(async () => {
    app = await startApp();
  });

  afterEach(async () => {
    await app.close();
  });

  it("GET /ping answers exactly `pong` as text/plain", async () => {
    const reply = await request(`${app.baseUrl}/ping`);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe("pong");
    expect(reply.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(reply.headers.get("x-powered-by")).toBeNull();
  });

  it("GET /config answers the checksummed signer address", async () => {
    const reply = await request(`${app.baseUrl}/config`);
    expect(reply.status).toBe(200);
    expect(reply.json()).toEqual({ signerAddress: SIGNER });
  });

  it.each(["/remove-liquidity", "/cancel-sender"])(
    "%s refuses a wrong or missing token with 401 JSON",
    async (path) => {
      const body = path === "/remove-liquidity" ? removeBody() : cancelBody();
      const wrong = await post(`${app.baseUrl}${path}`, { ...body, adminToken: WRONG_TOKEN });
      expectErrorBody(wrong, 401, "unauthorized");
      const { adminToken: _omitted, ...withoutToken } = body;
      expectErrorBody(await post(`${app.baseUrl}${path}`, withoutToken), 401, "unauthorized");
      expectErrorBody(await post(`${app.baseUrl}${path}`, { ...body, adminToken: 12345 }), 401, "unauthorized");
      expect(app.calls.removeLiquidity).toHaveLength(0);
      expect(app.calls.cancelSender).toHaveLength(0);
      await accessLines(app, wrong.headers.get("x-request-id") ?? "");
      expect(app.logs.text()).not.toContain(WRONG_TOKEN);
      expect(app.logs.text()).not.toContain(ADMIN_TOKEN);
    },
  );

  it("answers the same 401 body on every surface; only the pages add a Basic challenge", async () => {
    const { adminToken: _omitted, ...withoutToken } = removeBody();
    const api = await post(`${app.baseUrl}/remove-liquidity`, withoutToken);
    const apiBody = expectErrorBody(api, 401, "unauthorized");
    expect(api.headers.get("www-authenticate")).toBeNull();
    for (const path of ["/operator", "/ledger", "/pnl"]) {
      const page = await request(`${app.baseUrl}${path}`);
      const wrong = await fetch(`${app.baseUrl}${path}`, { headers: { authorization: `Bearer ${WRONG_TOKEN}` } });
      for (const [reply, body] of [
        [page, page.json()],
        [wrong, (await wrong.json()) as Record<string, unknown>],
      ] as const) {
        expect(reply.status).toBe(401);
        expect(reply.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
        expect({ error: body.error, message: body.message }).toEqual({
          error: apiBody.error,
          message: apiBody.message,
        });
      }
    }
  });

  it("authenticates before validating: a bad body without a token gets 401, not 400", async () => {
    const reply = await post(`${app.baseUrl}/remove-liquidity`, { chainId: "x", amount: "1.5", extra: true });
    expectErrorBody(reply, 401, "unauthorized");
    expect(reply.text).not.toMatch(/amount|chainId|extra/);
  });

  it("treats a POST without any body like an empty object: 401, not a body error", async () => {
    const reply = await request(`${app.baseUrl}/remove-liquidity`, { method: "POST", contentType: "application/json" });
    expectErrorBody(reply, 401, "unauthorized");
  });

  it("refuses malformed JSON with 400 malformed_json, without quoting the body", async () => {
    const reply = await request(`${app.baseUrl}/remove-liquidity`, {
      method: "POST",
      contentType: "application/json",
      body: `{"adminToken": "${ADMIN_TOKEN}", "chainId": `,
    });
    expectErrorBody(reply, 400, "malformed_json");
    expect(reply.text).not.toContain(ADMIN_TOKEN);
  });

  it.each([["[1,2]"], ['"text"'], ["null"], ["42"]])("refuses a JSON body that is not an object (%s)", async (body) => {
    const reply = await request(`${app.baseUrl}/remove-liquidity`, {
      method: "POST",
      contentType: "application/json",
      body,
    });
    expectErrorBody(reply, 400, "invalid_body");
  });

  it("names every bad field in one 400 invalid_body, never echoing values", async () => {
    const { recipientAddress: _omitted, ...body } = removeBody({
      assetId: "0x1234SECRETISH",
      amount: "1.5",
      color: "crimson-value",
    });
    const reply = await post(`${app.baseUrl}/remove-liquidity`, body);
    const error = expectErrorBody(reply, 400, "invalid_body");
    const message = String(error.message);
    expect(message).toContain("assetId: must be an address");
    expect(message).toContain("amount: must be a whole number of base units");
    expect(message).toContain("recipientAddress: is required");
    expect(message).toContain("(body): 1 field is not accepted; accepted: adminToken, chainId");
    expect(message).not.toContain("color");
    expect(message).not.toContain("SECRETISH");
    expect(message).not.toContain("1.5");
    expect(message).not.toContain("crimson-value");
    expect(app.calls.removeLiquidity).toHaveLength(0);
  });

  it.each([["1.5"], ["0.0001"], ["1."], ["0"], ["-5"], ["1e18"], [1000]])(
    "refuses amount %p with 400 invalid_amount",
    async (amount) => {
      const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ amount }));
      const error = expectErrorBody(reply, 400, "invalid_amount");
      expect(String(error.message)).toMatch(/^amount: /);
    },
  );

  it("refuses a bad address, a zero recipient and a bad chain id", async () => {
    const badAddress = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ recipientAddress: "0x123" }));
    expect(expectErrorBody(badAddress, 400, "invalid_body").message).toBe(
      "recipientAddress: must be an address (0x and 40 hex digits; a mixed-case address must have a valid checksum)",
    );
    const badChecksum = await post(
      `${app.baseUrl}/remove-liquidity`,
      removeBody({ assetId: ASSET.replace("dAC", "DAc") }),
    );
    expect(String(expectErrorBody(badChecksum, 400, "invalid_body").message)).toMatch(/^assetId: /);
    const zero = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ recipientAddress: `0x${"0".repeat(40)}` }));
    expect(expectErrorBody(zero, 400, "invalid_body").message).toBe("recipientAddress: must not be the zero address");
    for (const chainId of ["abc", "-1", 0, 1.5, "", null]) {
      const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ chainId }));
      expect(String(expectErrorBody(reply, 400, "invalid_body").message)).toMatch(/^chainId: /);
    }
  });

  it("accepts chainId as a digit string or an integer and hands normalised values to the operation", async () => {
    const asString = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ amount: "000123" }));
    expect(asString.status).toBe(200);
    expect(asString.json()).toEqual({ transactionHash: TX_HASH });
    const asNumber = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ chainId: CHAIN_ID }));
    expect(asNumber.status).toBe(200);
    expect(app.calls.removeLiquidity).toEqual([
      { chainId: CHAIN_ID, assetId: ASSET, amount: "123", recipientAddress: RECIPIENT },
      { chainId: CHAIN_ID, assetId: ASSET, amount: "1000", recipientAddress: RECIPIENT },
    ]);
  });

  it("refuses a chain missing from chainConfig with 400 unknown_chain naming the field", async () => {
    const remove = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ chainId: "5" }));
    expect(String(expectErrorBody(remove, 400, "unknown_chain").message)).toMatch(/^chainId: /);
    const cancel = await post(`${app.baseUrl}/cancel-sender`, cancelBody({ senderChainId: 5 }));
    expect(String(expectErrorBody(cancel, 400, "unknown_chain").message)).toMatch(/^senderChainId: /);
    expect(app.calls.removeLiquidity).toHaveLength(0);
    expect(app.calls.cancelSender).toHaveLength(0);
  });

  it("validates cancel-sender bodies and accepts senderChainId as an integer or digit string", async () => {
    const bad = await post(
      `${app.baseUrl}/cancel-sender`,
      cancelBody({ transactionId: "0x12", user: "me", force: "yes" }),
    );
    const message = String(expectErrorBody(bad, 400, "invalid_body").message);
    expect(message).toContain("transactionId: must be 0x followed by 64 hex digits");
    expect(message).toContain("user: must be an address");
    expect(message).toContain("force: must be true or false");
    expect((await post(`${app.baseUrl}/cancel-sender`, cancelBody())).status).toBe(200);
    expect(
      (await post(`${app.baseUrl}/cancel-sender`, cancelBody({ senderChainId: "1337", force: true }))).status,
    ).toBe(200);
    expect(app.calls.cancelSender).toEqual([
      { senderChainId: CHAIN_ID, transactionId: TRANSACTION_ID, user: RECIPIENT, force: false },
      { senderChainId: CHAIN_ID, transactionId: TRANSACTION_ID, user: RECIPIENT, force: true },
    ]);
  });

  it("refuses a body over 16 kB with 413 payload_too_large", async () => {
    const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ padding: "x".repeat(20_000) }));
    expectErrorBody(reply, 413, "payload_too_large");
  });

  it("refuses a non-JSON content type with 415, before reading the token", async () => {
    const form = await request(`${app.baseUrl}/remove-liquidity`, {
      method: "POST",
      contentType: "application/x-www-form-urlencoded",
      body: `adminToken=${ADMIN_TOKEN}`,
    });
    expectErrorBody(form, 415, "unsupported_media_type");
    const none = await request(`${app.baseUrl}/cancel-sender`, { method: "POST", body: JSON.stringify(cancelBody()) });
    expectErrorBody(none, 415, "unsupported_media_type");
    const gzip = await fetch(`${app.baseUrl}/remove-liquidity`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify(removeBody())),
    });
    expect(gzip.status).toBe(415);
    expect(app.calls.removeLiquidity).toHaveLength(0);
  });

  it("answers 404 JSON for an unknown route and 405 with Allow for a known path with the wrong method", async () => {
    expectErrorBody(await request(`${app.baseUrl}/nope`), 404, "not_found");
    expectErrorBody(
      await request(`${app.baseUrl}/nope`, { method: "POST", body: "{}", contentType: "application/json" }),
      404,
      "not_found",
    );
    const getRemove = await request(`${app.baseUrl}/remove-liquidity`);
    expectErrorBody(getRemove, 405, "method_not_allowed");
    expect(getRemove.headers.get("allow")).toBe("POST");
    const deletePing = await request(`${app.baseUrl}/ping`, { method: "DELETE" });
    expectErrorBody(deletePing, 405, "method_not_allowed");
    expect(deletePing.headers.get("allow")).toBe("GET, HEAD");
    const options = await request(`${app.baseUrl}/cancel-sender`, { method: "OPTIONS" });
    expectErrorBody(options, 405, "method_not_allowed");
    const head = await fetch(`${app.baseUrl}/ping`, { method: "HEAD" });
    expect(head.status).toBe(200);
  });

  it("echoes a well-formed X-Request-Id and replaces a malformed one", async () => {
    const echoed = await request(`${app.baseUrl}/ping`, { requestId: "client-req_42" });
    expect(echoed.headers.get("x-request-id")).toBe("client-req_42");
    const error = await request(`${app.baseUrl}/nope`, { requestId: "client-req_43" });
    expect(error.json().requestId).toBe("client-req_43");
    const replaced = await request(`${app.baseUrl}/ping`, { requestId: "bad id:with spaces" });
    expect(replaced.headers.get("x-request-id")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
  });

  it("writes exactly one access line per request, without the body", async () => {
    const cases: Array<[string, Promise<Reply>]> = [
      ["acc-ping", request(`${app.baseUrl}/ping`, { requestId: "acc-ping" })],
      ["acc-404", request(`${app.baseUrl}/nope`, { requestId: "acc-404" })],
      ["acc-200", post(`${app.baseUrl}/remove-liquidity`, removeBody(), "acc-200")],
    ];
    // A wrong token writes its one (throttled) admin.auth line instead of an access line.
    const refused = await post(
      `${app.baseUrl}/remove-liquidity`,
      { ...removeBody(), adminToken: WRONG_TOKEN },
      "acc-401",
    );
    expect(refused.status).toBe(401);
    expect(await accessLines(app, "acc-401")).toHaveLength(0);
    expect(app.logs.lines().filter((l) => l.at === "admin.auth" && l.requestId === "acc-401")).toHaveLength(1);
    for (const [requestId, pending] of cases) {
      const reply = await pending;
      const lines = await accessLines(app, requestId);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        method: expect.any(String),
        path: expect.any(String),
        status: reply.status,
        requestId,
      });
      expect(typeof lines[0].durationMs).toBe("number");
    }
    expect(app.logs.text()).not.toContain(RECIPIENT);
    expect(app.logs.text()).not.toContain(WRONG_TOKEN);
  });
});

describe("admin API (operation errors)", () => {
  it("turns a plain Error from an operation into a bare 500 and keeps the detail in the log", async () => {
    const app = await startApp({
      removeLiquidity: () => Promise.reject(new Error("disk on fire at /srv/secret-path")),
    });
    try {
      const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody(), "boom-1");
      expect(reply.status).toBe(500);
      expect(reply.json()).toEqual({ error: "internal_error", message: "internal error", requestId: "boom-1" });
      expect(reply.text).not.toContain("disk on fire");
      await accessLines(app, "boom-1");
      const errorLine = app.logs.lines().find((l) => l.at === "admin.error");
      expect(JSON.stringify(errorLine)).toContain("disk on fire");
    } finally {
      await app.close();
    }
  });
});

// ---- remove-liquidity end to end against a real redis-server ---------------------------------------------

describe("POST /remove-liquidity with a real queue", () => {
  let redis: RedisServer;
  let prefix: string;
  let queue: Queue;
  let events: QueueEvents;
  let worker: Worker | undefined;
  let app: RunningApp | undefined;
  let unlockedBalance: bigint;
  let plain: IORedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis.stop();
  });

  beforeEach(async () => {
    prefix = `test-${randomUUID()}`;
    unlockedBalance = 10n ** 24n;
    queue = new Queue(txQueueName(CHAIN_ID), { connection: producerConnection(redis.url), prefix });
    events = new QueueEvents(txQueueName(CHAIN_ID), {
      connection: { ...producerConnection(redis.url), maxRetriesPerRequest: null },
      prefix,
    });
    await queue.waitUntilReady();
    await events.waitUntilReady();
    plain = new IORedis({ ...producerConnection(redis.url), enableOfflineQueue: true });
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await worker?.close();
    worker = undefined;
    await queue.obliterate({ force: true });
    await events.close();
    await queue.close();
    plain.disconnect();
  });

  async function startRealApp(broadcastTimeoutMs: number): Promise<RunningApp> {
    const logs = recordLogs();
    const removeLiquidity = createRemoveLiquidityOperation({
      queueFor: () => queue,
      queueEventsFor: () => events,
      readUnlockedBalance: async () => unlockedBalance,
      redis: plain,
      redisPrefix: prefix,
      broadcastTimeoutMs,
      logger: logs.logger,
    });
    const started = await startApp({ removeLiquidity }, testConfig(redis.url));
    return started;
  }

  /** Plays the submitter: reports the broadcast through job progress, as the real one will. */
  function startSubmitter(beforeBroadcast: (jobData: unknown) => Promise<void> = async () => undefined): Worker {
    return new Worker(
      txQueueName(CHAIN_ID),
      async (job) => {
        await beforeBroadcast(job.data);
        await job.updateProgress({ stage: "broadcast", transactionHash: TX_HASH, nonce: 0 });
        return { transactionHash: TX_HASH, blockNumber: 1 };
      },
      { connection: workerConnection(redis.url), prefix },
    );
  }

  it("enqueues one job and answers with the hash the submitter broadcast", async () => {
    app = await startRealApp(10_000);
    worker = startSubmitter();
    const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ amount: "1000" }), "e2e-ok");
    expect(reply.status).toBe(200);
    expect(reply.json()).toEqual({ transactionHash: TX_HASH });
    const job = await queue.getJob(txJobId(TX_JOB.removeLiquidity, "e2e-ok"));
    expect(job?.name).toBe(TX_JOB.removeLiquidity);
    expect(job?.data).toEqual({
      chainId: CHAIN_ID,
      assetId: ASSET,
      amount: "1000",
      recipientAddress: RECIPIENT,
      requestId: "e2e-ok",
    });
    expect(JSON.stringify(job?.data)).not.toContain(ADMIN_TOKEN);
  });

  it("refuses with 409 insufficient_liquidity stating both amounts, and enqueues nothing", async () => {
    unlockedBalance = 999n;
    app = await startRealApp(10_000);
    const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ amount: "1000" }), "e2e-409");
    const body = expectErrorBody(reply, 409, "insufficient_liquidity");
    expect(body.message).toBe("unlocked balance 999 is below the requested amount 1000");
    expect(await queue.getJob(txJobId(TX_JOB.removeLiquidity, "e2e-409"))).toBeUndefined();
  });

  it("answers 504 broadcast_timeout with the job id when no submitter runs, and a retry reuses the job", async () => {
    app = await startRealApp(300);
    const jobId = txJobId(TX_JOB.removeLiquidity, "e2e-retry");
    const first = await post(`${app.baseUrl}/remove-liquidity`, removeBody(), "e2e-retry");
    const body = expectErrorBody(first, 504, "broadcast_timeout");
    expect(body.jobId).toBe(jobId);
    expect(body.message).toBe("no submitter broadcast the transaction within 0.3s; the job is still queued");

    const second = await post(`${app.baseUrl}/remove-liquidity`, removeBody(), "e2e-retry");
    expect(expectErrorBody(second, 504, "broadcast_timeout").jobId).toBe(jobId);
    const counts = await queue.getJobCounts("waiting", "prioritized", "active", "delayed", "completed", "failed");
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(1);

    // Once a submitter picks the job up, the same request id answers with its hash (no second job).
    unlockedBalance = 0n;
    worker = startSubmitter();
    await new Promise<void>((resolve) => worker?.once("completed", () => resolve()));
    const third = await post(`${app.baseUrl}/remove-liquidity`, removeBody(), "e2e-retry");
    expect(third.status).toBe(200);
    expect(third.json()).toEqual({ transactionHash: TX_HASH });
    const jobs = await queue.getJobs(["completed", "waiting", "prioritized", "active", "delayed", "failed"]);
    expect(jobs.map((job) => job.id)).toHaveLength(1);
  });

  it("refuses a reused request id with a different body with 409 request_id_conflict", async () => {
    app = await startRealApp(300);
    await post(`${app.baseUrl}/remove-liquidity`, removeBody({ amount: "1000" }), "e2e-conflict");
    const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody({ amount: "2000" }), "e2e-conflict");
    expectErrorBody(reply, 409, "request_id_conflict");
  });

  it("answers 502 transaction_failed with the redacted failure reason when the submitter gives up", async () => {
    app = await startRealApp(10_000);
    worker = startSubmitter(async () => {
      throw new UnrecoverableError(
        `rpc https://user:pw@rpc.example/v2/abcdefghijklmnopqrstuvwxyz refused; ${ADMIN_TOKEN}`,
      );
    });
    const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody(), "e2e-502");
    const body = expectErrorBody(reply, 502, "transaction_failed");
    expect(String(body.message)).toMatch(/^the submitter failed the job: rpc /);
    expect(reply.text).not.toContain("abcdefghijklmnopqrstuvwxyz");
    expect(reply.text).not.toContain("pw@");
    expect(reply.text).not.toContain(ADMIN_TOKEN);
  });

  it("answers 503 queue_unavailable quickly when Redis is down", async () => {
    const doomed = await startRedis();
    // Our own client that never reconnects, or its reconnect loop would outlive the test.
    const connection = new IORedis({ ...producerConnection(doomed.url), retryStrategy: () => null });
    connection.on("error", () => undefined);
    const deadQueue = new Queue(txQueueName(CHAIN_ID), { connection, prefix });
    deadQueue.on("error", () => undefined);
    await deadQueue.waitUntilReady();
    await doomed.stop();
    const logs = recordLogs();
    const removeLiquidity = createRemoveLiquidityOperation({
      queueFor: () => deadQueue,
      queueEventsFor: () => events,
      readUnlockedBalance: async () => unlockedBalance,
      redis: connection,
      redisPrefix: prefix,
      broadcastTimeoutMs: 10_000,
      logger: logs.logger,
    });
    app = await startApp({ removeLiquidity }, testConfig(redis.url));
    try {
      const startedAtMs = Date.now();
      const reply = await post(`${app.baseUrl}/remove-liquidity`, removeBody(), "e2e-503");
      expectErrorBody(reply, 503, "queue_unavailable");
      expect(Date.now() - startedAtMs).toBeLessThan(6_000);
    } finally {
      if (connection.status !== "end") {
        await new Promise((resolve) => connection.once("end", resolve));
      }
      await deadQueue.close().catch(() => undefined);
    }
  });
});

describe("isLoopbackHost (the admin.listen warning)", () => {
  it.each(["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]", "::ffff:127.0.0.1"])(
    "%s is loopback",
    (host) => {
      expect(isLoopbackHost(host)).toBe(true);
    },
  );

  it.each(["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "router.internal", "128.0.0.1"])(
    "%s is not loopback",
    (host) => {
      expect(isLoopbackHost(host)).toBe(false);
    },
  );
});
