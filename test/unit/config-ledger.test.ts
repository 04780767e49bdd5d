import { PassThrough } from "node:stream";
import { configSecrets, loadConfig, redactConfig, ConfigError } from "../../shared/config";
import { LEDGER_DEFAULTS } from "../../shared/config/defaults";
import { createLogger } from "../../shared/logging/create-logger";
import { validConfig } from "./config-fixtures";

const PASSWORD = "s3cret-pg-pass%21word";
const URL_WITH_PASSWORD = `postgres://router:${PASSWORD}@db.internal:5432/router_ledger`;

function problemsOf(raw: Record<string, unknown>): readonly string[] {
  try {
    loadConfig(raw, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("config: ledger", () => {
  it("is absent unless configured: the books are off and routing is unaffected", () => {
    expect(loadConfig(validConfig(), {}).config.ledger).toBeUndefined();
  });

  it("takes the defaults for every key but databaseUrl", () => {
    const { config } = loadConfig({ ...validConfig(), ledger: { databaseUrl: URL_WITH_PASSWORD } }, {});
    expect(config.ledger).toEqual({ databaseUrl: URL_WITH_PASSWORD, ...LEDGER_DEFAULTS });
    // The books are checked against the chain every 10 minutes unless told otherwise.
    expect(config.ledger?.reconcileIntervalMs).toBe(600_000);
    expect(
      problemsOf({ ...validConfig(), ledger: { databaseUrl: URL_WITH_PASSWORD, reconcileIntervalMs: 10 } }),
    ).toEqual([expect.stringMatching(/^ledger\.reconcileIntervalMs: /)]);
  });

  it("names the bad key, and never echoes the URL", () => {
    const problems = problemsOf({
      ...validConfig(),
      ledger: { databaseUrl: `mysql://router:${PASSWORD}@db/x`, concurrency: 0, repriceInterval: 5 },
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        "ledger.databaseUrl: must be a postgres:// or postgresql:// URL",
        expect.stringMatching(/^ledger\.concurrency: /),
        "ledger.repriceInterval: unknown key (did you mean `repriceIntervalMs`?)",
      ]),
    );
    expect(problems.join("\n")).not.toContain(PASSWORD);
    expect(problemsOf({ ...validConfig(), ledger: {} })).toEqual(["ledger.databaseUrl: is required"]);
  });

  it("keeps the database password out of GET /config's copy and out of log lines", () => {
    const { config } = loadConfig({ ...validConfig(), ledger: { databaseUrl: URL_WITH_PASSWORD } }, {});
    const printed = JSON.stringify(redactConfig(config));
    expect(printed).not.toContain(PASSWORD);
    expect(printed).not.toContain(decodeURIComponent(PASSWORD));
    expect(printed).toContain("db.internal:5432/router_ledger");

    const stream = new PassThrough();
    let out = "";
    stream.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const logger = createLogger({ level: "info", service: "test", secrets: configSecrets(config), stream });
    // As a driver error could word it: the decoded password in prose, and the URL itself.
    logger.error(`connect failed for ${URL_WITH_PASSWORD}`, { detail: `password ${decodeURIComponent(PASSWORD)}` });
    expect(out).toContain("connect failed");
    expect(out).not.toContain(PASSWORD);
    expect(out).not.toContain(decodeURIComponent(PASSWORD));
  });
});
