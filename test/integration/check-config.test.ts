import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const SCRIPT = resolve(__dirname, "../../dist/scripts/check-config.js");
const TOKEN = "check-config-admin-token-value";
const MNEMONIC = "test test test test test test test test test test test junk";

function run(config: unknown): { status: number | null; stdout: string; stderr: string } {
  if (!existsSync(SCRIPT)) {
    throw new Error(`${SCRIPT} is missing: run npm run build first`);
  }
  const dir = mkdtempSync(join(tmpdir(), "check-config-"));
  const file = join(dir, "config.json");
  writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config));
  const result = spawnSync(process.execPath, [SCRIPT, file], { encoding: "utf8", env: { PATH: process.env.PATH } });
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
    expect(stdout.startsWith("config ok\n")).toBe(true);
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

  it("refuses a file that is not JSON, exit 1", () => {
    const { status, stderr } = run("{ not json");
    expect(status).toBe(1);
    expect(stderr).toMatch(/not valid JSON/);
  });
});
