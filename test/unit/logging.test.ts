import { PassThrough } from "node:stream";
import { createLogger, type LogLevel } from "../../shared/logging/create-logger";
import { redactUrl } from "../../shared/logging/redact";
import { redactConfig, loadConfig } from "../../shared/config";

const ADMIN_TOKEN = "super-secret-admin-token-value";
const MNEMONIC = "test test test test test test test test test test test junk";
const PRIVATE_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

function capture(level: LogLevel = "trace"): {
  logger: ReturnType<typeof createLogger>;
  lines: () => Array<Record<string, unknown>>;
  text: () => string;
} {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c.toString("utf8")));
  const logger = createLogger({ level, service: "test", secrets: [ADMIN_TOKEN, MNEMONIC], stream });
  const text = (): string => chunks.join("");
  const lines = (): Array<Record<string, unknown>> =>
    text()
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, text };
}

describe("createLogger", () => {
  it("writes one JSON object per line with level, message, service and fields", async () => {
    const { logger, lines } = capture();
    logger.info("hello", { chainId: 1337, amount: 10n });
    logger.child({ jobId: "job-1" }).warn("child line");
    await logger.flush();
    const [first, second] = lines();
    expect(first).toMatchObject({ level: "info", message: "hello", service: "test", chainId: 1337, amount: "10" });
    expect(typeof first.timestamp).toBe("string");
    expect(second).toMatchObject({ level: "warn", message: "child line", jobId: "job-1" });
  });

  it("supports the spec's levels, fatal to trace, and filters below the configured one", async () => {
    const { logger, lines } = capture("warn");
    logger.fatal("f");
    logger.error("e");
    logger.warn("w");
    logger.info("i");
    logger.debug("d");
    logger.trace("t");
    await logger.flush();
    expect(lines().map((l) => l.level)).toEqual(["fatal", "error", "warn"]);
  });

  it("keeps winston's line: keys sorted, a call's field over a child's, a `message` field appended", async () => {
    const { logger, text, lines } = capture();
    logger
      .child({ at: "child", jobId: "job-1" })
      .child({ jobId: "job-2" })
      .info("hello", { at: "call", message: "more" });
    await logger.flush();
    const [line] = lines();
    expect(line).toMatchObject({ at: "call", jobId: "job-2", message: "hello more", service: "test" });
    const keys = Object.keys(JSON.parse(text().trim()) as object);
    expect(keys).toEqual([...keys].sort());
  });

  it("writes nothing when silent", async () => {
    const { logger, text } = capture("silent");
    logger.fatal("nothing");
    await logger.flush();
    expect(text()).toBe("");
  });

  it("never lets a secret reach the output, whatever the call site passes", async () => {
    const { logger, text } = capture();
    logger.info(`token is ${ADMIN_TOKEN}`, {
      adminToken: ADMIN_TOKEN,
      nested: { mnemonic: MNEMONIC, privateKey: PRIVATE_KEY, list: [`phrase: ${MNEMONIC}`] },
      provider: "https://user:hunter2@rpc.example.com/v3/abcdef0123456789abcdef?apikey=zzzsecretzzz",
    });
    logger.error("failed", { error: new Error(`could not use ${ADMIN_TOKEN} at https://u:pw123456@host.example/`) });
    await logger.flush();
    const out = text();
    expect(out).not.toContain(ADMIN_TOKEN);
    expect(out).not.toContain("test test test");
    expect(out).not.toContain(PRIVATE_KEY.slice(2));
    expect(out).not.toContain("hunter2");
    expect(out).not.toContain("abcdef0123456789abcdef");
    expect(out).not.toContain("zzzsecretzzz");
    expect(out).not.toContain("pw123456");
    expect(out).toContain("rpc.example.com");
  });
});

describe("redactUrl", () => {
  it("strips credentials, key-like path segments and query values, and leaves plain URLs alone", () => {
    expect(redactUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545");
    expect(redactUrl("https://eth-mainnet.g.alchemy.com/v2/AbCdEfGhIjKlMnOpQrSt")).toBe(
      "https://eth-mainnet.g.alchemy.com/v2/***",
    );
    expect(redactUrl("wss://a:b@node.example/ws")).toBe("wss://***@node.example/ws");
    expect(redactUrl("https://rpc.example/?key=123")).toBe("https://rpc.example/?key=***");
    expect(redactUrl("not a url")).toBe("not a url");
  });
});

describe("redactConfig", () => {
  it("masks the token and mnemonic in a copy and leaves the config untouched", () => {
    const { config } = loadConfig(
      {
        adminToken: ADMIN_TOKEN,
        mnemonic: MNEMONIC,
        chainConfig: { "1": { providers: ["https://user:hunter2@rpc.example/"] } },
        swapPools: [],
      },
      {},
    );
    const printed = JSON.stringify(redactConfig(config));
    expect(printed).not.toContain(ADMIN_TOKEN);
    expect(printed).not.toContain("test test");
    expect(printed).not.toContain("hunter2");
    expect(config.adminToken).toBe(ADMIN_TOKEN);
  });
});
