import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const SCRIPT = resolve(__dirname, "../../dist/scripts/check-config.js");
const TOKEN = "check-config-admin-token-value";
const MNEMONIC = "test test test test test test test test test test test junk";

function run(config: unknown, env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  if (!existsSync(SCRIPT)) {
    throw new Error(`${SCRIPT} is missing: run npm run build first`);
  }
  const dir = mkdtempSync(join(tmpdir(), "check-config-"));
  const file = join(dir, "config.json");
  writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config));
  const result = spawnSync(process.execPath, [SCRIPT, file], {
    encoding: "utf8",
    env: { PATH: process.env.PATH, ...env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const valid = {
  adminToken: TOKEN,
  mnemonic: MNEMONIC,
  chainConfig: { "1": { providers: ["https://user:hunter2@rpc.example/"] } },
  swapPools: [],
};

describe("npm run check-config", () => {
  it("prints config ok and the effective values with secrets masked, exit 0", () => {
    const { status, stdout } = run(valid);
    expect(status).toBe(0);
    expect(stdout).toMatch(/^config ok\n/);
    const printed = JSON.parse(stdout.slice("config ok\n".length)) as Record<string, unknown>;
    expect(printed.port).toBe(8080);
    expect(stdout).not.toContain(TOKEN);
    expect(stdout).not.toContain("test test");
    expect(stdout).not.toContain("hunter2");
  });

  it("prints one line per problem naming the key, exit 1", () => {
    const { status, stderr, stdout } = run({ ...valid, port: 0, chainConfig: { "1": { providers: ["ftp://x"] } } });
    expect(status).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^ {2}port: /m);
    expect(stderr).toMatch(/^ {2}chainConfig\.1\.providers\[0\]: /m);
    expect(stderr).not.toContain(TOKEN);
  });

  it("reports three mistakes of three kinds in one run: a misspelt key, a bad value, a chain rule; exit 1", () => {
    const { status, stderr, stdout } = run({
      ...valid,
      redisURL: "redis://10.0.0.9:6379",
      chainConfig: {
        "1": { providers: ["rpc.example:8545"] },
        "56": { providers: ["https://bsc.example"] },
      },
      swapPools: [
        {
          name: "USDC",
          assets: [
            { chainId: 56, assetId: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d" },
            { chainId: 137, assetId: "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174" },
          ],
        },
      ],
    });
    expect(status).toBe(1);
    expect(stdout).toBe("");
    const problems = stderr.split("\n").filter((line) => line.startsWith("  "));
    expect(problems).toEqual([
      expect.stringMatching(/^ {2}chainConfig\.1\.providers\[0\]: must be a valid uri/),
      "  redisURL: unknown key (did you mean `redisUrl`?)",
      "  swapPools[0].assets[1].chainId: chain 137 is not in chainConfig",
    ]);
    expect(stderr).toContain("(3 problem(s))");
  });

  it("refuses a config of the original router that would change meaning, and warns about each renamed key", () => {
    const { status, stderr } = run(
      { ...valid, mnemonic: undefined, web3SignerUrl: "http://10.0.0.7:9000", metrics_port: 8081 },
      { NXTP_NATS_URL: "nats://10.0.0.4:4222" },
    );
    expect(status).toBe(1);
    expect(stderr).toMatch(/^warning: web3SignerUrl: the original router's key, read as remoteSignerUrl/m);
    expect(stderr).toMatch(/^ {2}\(env\) NXTP_NATS_URL: .*set messagingUrl in the config file$/m);
    expect(stderr).toMatch(/^ {2}metrics_port: the original router's key, not read here: .*set metricsPort$/m);
    expect(stderr).not.toMatch(/a signer is required/);
  });

  it("reports the original router's variables even when the file cannot be read", () => {
    const result = spawnSync(process.execPath, [SCRIPT, join(tmpdir(), "no-such-config.json")], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, NXTP_CONFIG_FILE: "/etc/router.json" },
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^ {2}\(env\) NXTP_CONFIG_FILE: .*ROUTER_CONFIG_FILE/m);
    expect(result.stderr).toMatch(/file not found/);
  });

  it("refuses a file that is not JSON, exit 1", () => {
    const { status, stderr } = run("{ not json");
    expect(status).toBe(1);
    expect(stderr).toMatch(/not valid JSON/);
  });
});
