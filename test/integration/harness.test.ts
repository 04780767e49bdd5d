import { randomUUID } from "node:crypto";
import { Queue, QueueEvents, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import { JSONCodec, connect as connectNats } from "nats";
import { HDNodeWallet, ZeroAddress, getAddress, parseEther } from "ethers";
import { ANVIL_KEYS, ANVIL_MNEMONIC, anvilBinary, anvilProvider, anvilWallet, startAnvil } from "../harness/anvil";
import { isProcessAlive, liveChildPids, ServiceStartError, startOnFreePort } from "../harness/child-process";
import { fundRouterLiquidity, mintToken, nxtpContractAt, readAddress, readBigInt } from "../harness/deploy";
import { startStack, type Stack } from "../harness/stack";

/** Proves the harness against the real parts: redis-server, nats-server, anvil + the NXTP bytecode. */

const CHAIN_A = 1337;
const CHAIN_B = 1338;
const MACHINE_PORTS = new Set([6379, 4222]);

describe("real-service harness", () => {
  let stack: Stack;
  let stackPids: number[] = [];

  beforeAll(async () => {
    stack = await startStack({
      chainIds: [CHAIN_A, CHAIN_B],
      withRouterContract: { recipient: anvilWallet(2).address },
    });
    stackPids = [...stack.chains.values()].map((c) => c.anvil.pid);
    stackPids.push(stack.redis?.pid ?? -1, stack.nats?.pid ?? -1);
  });

  afterAll(async () => {
    const started = stack as Stack | undefined; // undefined when beforeAll failed
    await started?.stop();
    await started?.stop(); // idempotent
    expect(stackPids.filter(isProcessAlive)).toEqual([]);
    expect(liveChildPids()).toEqual([]);
  });

  it("starts every service on its own loopback port, never the machine's 6379/4222", () => {
    const ports = [...stack.chains.values()].map((c) => c.anvil.port);
    ports.push(stack.redis?.port ?? 0, stack.nats?.port ?? 0);
    expect(ports.filter((p) => p <= 0 || MACHINE_PORTS.has(p))).toEqual([]);
    expect(new Set(ports).size).toBe(ports.length);
    expect(stack.redis?.url).toBe(`redis://127.0.0.1:${stack.redis?.port}`);
    expect(stack.nats?.url).toBe(`nats://127.0.0.1:${stack.nats?.port}`);
  });

  it("(a) runs a BullMQ queue/worker roundtrip and ignores a duplicate jobId", async () => {
    const redis = stack.redis;
    if (!redis) throw new Error("stack started without redis");
    const connection = { host: redis.host, port: redis.port, maxRetriesPerRequest: null };
    const prefix = `test-${randomUUID()}`;
    const queue = new Queue<{ n: number }, number>("harness", { connection, prefix });
    const events = new QueueEvents("harness", { connection, prefix });
    const processed: number[] = [];
    const worker = new Worker<{ n: number }, number>(
      "harness",
      async (job: Job<{ n: number }, number>) => {
        processed.push(job.data.n);
        return job.data.n * 2;
      },
      { connection, prefix, concurrency: 2 },
    );
    const raw = new Redis({ host: redis.host, port: redis.port });
    try {
      await events.waitUntilReady();
      const first = await queue.add("double", { n: 21 }, { jobId: "job-dup" });
      await queue.add("double", { n: 99 }, { jobId: "job-dup" }); // same id: must be ignored
      await expect(first.waitUntilFinished(events, 10_000)).resolves.toBe(42);
      await expect(queue.getJobCounts("completed", "waiting", "active", "delayed", "failed")).resolves.toEqual({
        completed: 1,
        waiting: 0,
        active: 0,
        delayed: 0,
        failed: 0,
      });
      expect(processed).toEqual([21]);
      expect((await raw.keys(`${prefix}:*`)).length).toBeGreaterThan(0);

      await worker.close();
      await queue.obliterate({ force: true });
      expect(await raw.keys(`${prefix}:harness:*`)).toEqual([]);
    } finally {
      await worker.close();
      await events.close();
      await queue.close();
      raw.disconnect();
    }
  });

  it("(b) delivers a NATS publish to a subscriber", async () => {
    const nats = stack.nats;
    if (!nats) throw new Error("stack started without nats");
    const nc = await connectNats({ servers: nats.url, reconnect: false });
    try {
      const codec = JSONCodec<{ hello: string }>();
      const subject = `harness.${randomUUID()}`;
      const sub = nc.subscribe(subject, { max: 1 });
      const received = (async () => {
        for await (const msg of sub) return { subject: msg.subject, data: codec.decode(msg.data) };
        throw new Error("subscription closed without a message");
      })();
      nc.publish(subject, codec.encode({ hello: "router" }));
      await expect(received).resolves.toEqual({ subject, data: { hello: "router" } });
    } finally {
      await nc.close();
    }
  });

  it("(c) deploys NXTP and funds router liquidity in the token and the native asset", async () => {
    const { deployment, provider, deployer } = stack.chain(CHAIN_A);
    // Fresh anvil + account 0 deploying first gives the addresses deployments.json lists for 31337.
    expect(deployment.transactionManager).toBe("0x5FbDB2315678afecb367f032d93F642f64180aa3");
    expect(deployment.interpreter).toBe("0xa16E02E87b7454126E5E10d957A927A7F5B5d2be");
    expect(deployment.token).toBe("0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512");
    const tm = deployment.contracts.transactionManager;
    await expect(readBigInt(tm, "getChainId")).resolves.toBe(BigInt(CHAIN_A));
    await expect(readAddress(tm, "owner")).resolves.toBe(deployer.address);

    const router = stack.routerSigner;
    const tokenAmount = parseEther("1234.5");
    const nativeAmount = parseEther("3.25");
    const funder = anvilWallet(3, provider);
    await mintToken(deployment, funder.address, tokenAmount);
    await expect(readBigInt(deployment.contracts.token, "balanceOf", [funder.address])).resolves.toBe(tokenAmount);

    const afterToken = await fundRouterLiquidity({
      deployment,
      funder,
      router,
      assetId: deployment.token,
      amount: tokenAmount,
    });
    const afterNative = await fundRouterLiquidity({
      deployment,
      funder,
      router,
      assetId: ZeroAddress,
      amount: nativeAmount,
    });
    expect(afterToken).toBe(tokenAmount);
    expect(afterNative).toBe(nativeAmount);
    await expect(readBigInt(tm, "routerBalances", [router, deployment.token])).resolves.toBe(tokenAmount);
    await expect(readBigInt(tm, "routerBalances", [router, ZeroAddress])).resolves.toBe(nativeAmount);
    await expect(readBigInt(deployment.contracts.token, "balanceOf", [funder.address])).resolves.toBe(0n);
    await expect(provider.getBalance(deployment.transactionManager)).resolves.toBe(nativeAmount);

    // The factory-made router contract is approved and bound to our signer.
    const routerContract = deployment.routerContract;
    if (!routerContract) throw new Error("stack was asked for a router contract");
    await expect(readBigInt(tm, "routerBalances", [routerContract, deployment.token])).resolves.toBe(0n);
    const approved: unknown = await tm.getFunction("approvedRouters").staticCall(routerContract);
    expect(approved).toBe(true);
    const routerHandle = nxtpContractAt("Router", routerContract, provider);
    await expect(readAddress(routerHandle, "routerSigner")).resolves.toBe(router);
    await expect(readAddress(routerHandle, "transactionManager")).resolves.toBe(deployment.transactionManager);
  });

  it("(d) increaseTime moves the next block's timestamp; mine and setBalance work without automine", async () => {
    const anvil = await startAnvil({ chainId: 31337, noMining: true });
    const provider = anvilProvider(anvil.url, anvil.chainId);
    try {
      const before = await provider.getBlock("latest");
      if (!before) throw new Error("no latest block");
      await anvil.increaseTime(86_400);
      await anvil.mine();
      const after = await provider.getBlock("latest");
      if (!after) throw new Error("no latest block");
      expect(after.number).toBe(before.number + 1);
      expect(after.timestamp - before.timestamp).toBeGreaterThanOrEqual(86_400);
      expect(after.timestamp - before.timestamp).toBeLessThan(86_400 + 60);

      await anvil.mine(5);
      await expect(provider.getBlockNumber()).resolves.toBe(before.number + 6);
      const someone = getAddress("0x000000000000000000000000000000000000bEEF");
      await anvil.setBalance(someone, 123_456_789n);
      await expect(provider.getBalance(someone)).resolves.toBe(123_456_789n);
      await anvil.setAutomine(true);
      await expect(anvil.rpc<boolean>("anvil_getAutomine")).resolves.toBe(true);
    } finally {
      provider.destroy();
      await anvil.stop();
    }
    expect(isProcessAlive(anvil.pid)).toBe(false);
  });

  it("(e) runs two anvils with different chain ids at once", async () => {
    const a = stack.chain(CHAIN_A);
    const b = stack.chain(CHAIN_B);
    expect(a.anvil.port).not.toBe(b.anvil.port);
    await expect(a.anvil.rpc<string>("eth_chainId")).resolves.toBe("0x539");
    await expect(b.anvil.rpc<string>("eth_chainId")).resolves.toBe("0x53a");
    await expect(a.provider.send("eth_chainId", [])).resolves.toBe("0x539");
    await expect(readBigInt(b.deployment.contracts.transactionManager, "getChainId")).resolves.toBe(BigInt(CHAIN_B));
    expect(() => stack.chain(1)).toThrow("stack has no chain 1");
  });

  it("derives the same keys as anvil's default mnemonic", () => {
    const derived = ANVIL_KEYS.map(
      (_, i) => HDNodeWallet.fromPhrase(ANVIL_MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`).privateKey,
    );
    expect(derived).toEqual(ANVIL_KEYS);
    expect(anvilWallet(0).address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    expect(anvilWallet(10).address).toBe(
      HDNodeWallet.fromPhrase(ANVIL_MNEMONIC, undefined, "m/44'/60'/0'/0/10").address,
    );
  });

  it("fails fast, with the process output, when a service exits during start-up", async () => {
    // The probe never answers ready: only the exit can end the start before this readiness timeout.
    const readyTimeoutMs = 10_000;
    const startedAtMs = Date.now();
    const err: unknown = await startOnFreePort({
      name: "anvil-bad-flag",
      command: anvilBinary(),
      args: (port) => ["--port", String(port), "--no-such-flag"],
      probe: async () => false,
      timeoutMs: readyTimeoutMs,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceStartError);
    if (!(err instanceof ServiceStartError)) return;
    expect(err.exit?.code).toBe(2); // clap's usage-error exit code
    expect(err.output).toContain("--no-such-flag");
    // Ended by the exit, not by waiting out the readiness timeout (a speed bound would only measure the machine).
    expect(Date.now() - startedAtMs).toBeLessThan(readyTimeoutMs);
    await expect(startAnvil({ chainId: 0 })).rejects.toBeInstanceOf(RangeError);
  });

  it("gives up after the readiness timeout and kills the process", async () => {
    let pid = -1;
    const err: unknown = await startOnFreePort({
      name: "never-ready",
      command: "/bin/sleep",
      args: () => ["30"],
      probe: async () => {
        pid = liveChildPids()[liveChildPids().length - 1] ?? -1;
        return false;
      },
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceStartError);
    if (!(err instanceof ServiceStartError)) return;
    expect(err.exit).toBeNull();
    expect(pid).toBeGreaterThan(0);
    expect(isProcessAlive(pid)).toBe(false);
  });
});
