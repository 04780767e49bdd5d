import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getFreePort } from "../harness/free-port";
import { startRedis, type RedisServer } from "../harness/redis";
import { startWeb3SignerServer } from "../harness/web3signer-server";

const MAIN = resolve(__dirname, "../../dist/services/admin/main.js");
const ADMIN_TOKEN = "process-test-admin-token-0123456789";
const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";
const ANVIL_ADDRESS_0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const TM_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
/** Anvil account 2: a key the mnemonic above does not derive at the default path. */
const REMOTE_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const REMOTE_ADDRESS = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

interface AdminProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Messages sent over the IPC channel, as PM2 would receive them (wait_ready). */
  messages(): unknown[];
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

function spawnAdmin(configPath: string): AdminProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, ROUTER_CONFIG_FILE: configPath };
  // The secret env overrides of the config would otherwise leak in from the developer's shell.
  delete env.ROUTER_ADMIN_TOKEN;
  delete env.ROUTER_MNEMONIC;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, [MAIN], { env, stdio: ["ignore", "pipe", "pipe", "ipc"] });
  let out = "";
  let err = "";
  const messages: unknown[] = [];
  child.on("message", (message) => messages.push(message));
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return { child, stdout: () => out, stderr: () => err, messages: () => messages, exited };
}

async function waitForPing(baseUrl: string, proc: AdminProcess, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) {
      throw new Error(`admin exited with ${proc.child.exitCode}:\n${proc.stderr()}\n${proc.stdout()}`);
    }
    try {
      const res = await fetch(`${baseUrl}/ping`);
      if (res.ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`admin did not answer /ping within ${timeoutMs} ms:\n${proc.stderr()}\n${proc.stdout()}`);
}

async function exitWithin(proc: AdminProcess, ms: number): Promise<number | null | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((r) => {
    timer = setTimeout(() => r("timeout"), ms);
  });
  try {
    return await Promise.race([proc.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe("admin process (dist/services/admin/main.js)", () => {
  let redis: RedisServer;
  let dir: string;
  const running: AdminProcess[] = [];

  beforeAll(async () => {
    if (!existsSync(MAIN)) {
      throw new Error(`${MAIN} is missing: run npm run build first (npm test does it for you)`);
    }
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "admin-process-"));
  });

  afterEach(() => {
    for (const proc of running.splice(0)) {
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill("SIGKILL");
      }
    }
  });

  afterAll(async () => {
    await redis?.stop();
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  function writeConfig(
    name: string,
    port: number,
    providers: unknown,
    signer: Record<string, string> = { mnemonic: ANVIL_MNEMONIC },
  ): string {
    const unusedRpcPort = 1;
    const path = join(dir, name);
    const config = {
      adminToken: ADMIN_TOKEN,
      ...signer,
      host: "127.0.0.1",
      port,
      logLevel: "debug",
      redisUrl: redis.url,
      redisPrefix: `admin-process-${port}`,
      chainConfig: {
        "1": {
          providers: providers ?? [`http://127.0.0.1:${unusedRpcPort}`],
          transactionManagerAddress: TM_ADDRESS,
        },
      },
      swapPools: [],
    };
    writeFileSync(path, JSON.stringify(config));
    return path;
  }

  it("serves /ping, /config and refuses a wrong token; SIGTERM exits 0", async () => {
    const port = await getFreePort();
    const proc = spawnAdmin(writeConfig("good.json", port, undefined));
    running.push(proc);
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitForPing(baseUrl, proc);

    const ping = await fetch(`${baseUrl}/ping`);
    expect(await ping.text()).toBe("pong");
    // PM2's "ready" follows the first passing /readyz (Redis reachable), which may come just after /ping answers.
    const readyBy = Date.now() + 10_000;
    while (!proc.messages().includes("ready") && Date.now() < readyBy) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(proc.messages()).toContain("ready");
    const config = await fetch(`${baseUrl}/config`);
    expect(await config.json()).toEqual({ signerAddress: ANVIL_ADDRESS_0 });
    const refused = await fetch(`${baseUrl}/remove-liquidity`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        adminToken: "wrong",
        chainId: "1",
        assetId: TM_ADDRESS,
        amount: "1",
        recipientAddress: TM_ADDRESS,
      }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("content-type")).toMatch(/^application\/json/);
    expect(((await refused.json()) as { error: string }).error).toBe("unauthorized");

    proc.child.kill("SIGTERM");
    expect(await exitWithin(proc, 9_000)).toBe(0);
    const output = proc.stdout();
    expect(output).toContain('"at":"admin.listen"');
    expect(output).toContain('"at":"service.shutdown"');
    expect(output).not.toContain(ADMIN_TOKEN);
    expect(output).not.toContain(ANVIL_MNEMONIC);
  });

  it("answers /config with the remote signer's address when the key lives in a web3signer", async () => {
    const signer = await startWeb3SignerServer({ privateKey: REMOTE_KEY });
    try {
      const port = await getFreePort();
      const proc = spawnAdmin(writeConfig("remote.json", port, undefined, { remoteSignerUrl: signer.url }));
      running.push(proc);
      await waitForPing(`http://127.0.0.1:${port}`, proc);
      const config = await fetch(`http://127.0.0.1:${port}/config`);
      expect(await config.json()).toEqual({ signerAddress: REMOTE_ADDRESS });
      expect(signer.requests).toContainEqual(expect.objectContaining({ path: "/api/v1/eth1/publicKeys" }));
    } finally {
      await signer.stop();
    }
  });

  it("exits 1 with a fatal log line when start() fails (port already taken)", async () => {
    const port = await getFreePort();
    const first = spawnAdmin(writeConfig("first.json", port, undefined));
    running.push(first);
    await waitForPing(`http://127.0.0.1:${port}`, first);
    const second = spawnAdmin(writeConfig("second.json", port, undefined));
    running.push(second);
    expect(await exitWithin(second, 9_000)).toBe(1);
    expect(second.stdout()).toMatch(/"at":"service.fatal".*EADDRINUSE|EADDRINUSE.*"at":"service.fatal"/);
    expect(second.messages()).not.toContain("ready");
  });

  it("refuses a bad config with exit code 1 before listening, naming the key path on stderr", async () => {
    const port = await getFreePort();
    const proc = spawnAdmin(writeConfig("bad.json", port, ["ftp://x"]));
    running.push(proc);
    expect(await exitWithin(proc, 5_000)).toBe(1);
    expect(proc.stderr()).toContain("admin: chainConfig.1.providers[0]");
    expect(proc.stderr()).not.toContain(ADMIN_TOKEN);
    expect(proc.stderr()).not.toContain(ANVIL_MNEMONIC);
    expect(proc.stdout()).not.toContain("admin.listen");
    await expect(fetch(`http://127.0.0.1:${port}/ping`)).rejects.toThrow();
  });

  it("reports every problem of the file in one run: a misspelt key, a bad value and a pool chain rule", async () => {
    const port = await getFreePort();
    const path = writeConfig("three-mistakes.json", port, ["127.0.0.1:8545"]);
    const { redisUrl, ...config } = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    const asset = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
    const pool = {
      assets: [
        { chainId: 1, assetId: asset },
        { chainId: 1338, assetId: asset },
      ],
    };
    writeFileSync(path, JSON.stringify({ ...config, redisURL: redisUrl, swapPools: [pool] }));
    const proc = spawnAdmin(path);
    running.push(proc);
    expect(await exitWithin(proc, 5_000)).toBe(1);
    expect(proc.stderr()).toContain("admin: invalid router config (3 problem(s)); not starting");
    expect(proc.stderr()).toMatch(/^admin: chainConfig\.1\.providers\[0\]: must be a valid uri/m);
    expect(proc.stderr()).toContain("admin: redisURL: unknown key (did you mean `redisUrl`?)");
    expect(proc.stderr()).toContain("admin: swapPools[0].assets[1].chainId: chain 1338 is not in chainConfig");
    expect(proc.stdout()).not.toContain("admin.listen");
  });
});
