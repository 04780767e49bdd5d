import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Wallet, ZeroAddress, getAddress, parseEther } from "ethers";
import { Redis } from "ioredis";
import { connect } from "nats";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { anvilWallet } from "../harness/anvil";
import { ROUTER_DIST, spawnRouterProcess, waitForReady, type ManagedProcess } from "../harness/child-process";
import { fundRouterLiquidity, mintToken, nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import { startStack, type Stack, type StackChain } from "../harness/stack";
import { startSubgraphServer, type SubgraphServer } from "../harness/subgraph-server";
import { getFreePort } from "../harness/free-port";
import { uniquePrefix } from "../harness/prefix";

/**
 * The stack the real SDK swaps on (test/e2e/sdk.test.ts): anvil 1, 1337, 1338 with NXTP, redis, nats, a
 * log-backed subgraph per swap chain for the SDK, and the router as real child processes from dist/ sharing
 * one config file (network "local", messaging on the harness nats, relaying allowed on 1338). Chain 1 is
 * only there for the config rule and the gas-fee oracle: no process runs for it.
 */
export const CHAIN1 = 1;
export const SENDING = 1337;
export const RECEIVING = 1338;
export const LIQUIDITY = parseEther("1000");
/** The router's native (ETH) liquidity on each swap chain, for the native pool. */
export const NATIVE_LIQUIDITY = parseEther("100");
export const USER_TOKENS = parseEther("100");
/** USD × 1e18 per whole token, for native and TEST on 1337 and 1338. */
export const ORACLE_PRICE = parseEther("1");
const ROOT = resolve(__dirname, "../..");
export const SDK_MODULES = join(ROOT, "test/sdk/node_modules/@connext/nxtp-sdk/package.json");

export interface SdkStack {
  readonly stack: Stack;
  readonly sending: StackChain;
  readonly receiving: StackChain;
  /** The router signer, also the router (direct mode). */
  readonly router: string;
  readonly subgraphs: ReadonlyMap<number, SubgraphServer>;
  /** The local messaging auth service (dist/services/messaging-auth/main.js) the router and the SDK sign in at. */
  readonly authUrl: string;
  readonly configFile: string;
  readonly prefix: string;
  readonly redis: Redis;
  /** Router processes, by name. */
  readonly processes: Map<string, ManagedProcess>;
  spawn(name: string, main: string, env?: readonly string[]): ManagedProcess;
  /**
   * Spawns one poller process for both swap chains (CHAIN_ID=1337,1338, as ecosystem.config.js runs it) and
   * resolves once each chain's poller stored a head in Redis.
   */
  spawnPoller(): Promise<ManagedProcess>;
  /** The last output of every router process, for failure messages. */
  outputTails(): string;
  stop(): Promise<void>;
}

/** Fails fast with the command to run when a prerequisite of the test is missing. */
export function assertPrerequisites(mains: readonly string[]): void {
  if (!existsSync(SDK_MODULES)) {
    throw new Error("test/sdk/node_modules is missing: run scripts/install-sdk-test-deps.sh (npm test does it)");
  }
  for (const main of mains) {
    if (!existsSync(join(ROUTER_DIST, main))) {
      throw new Error(`dist/services/${main} is missing: run npm run build first (npm test does it)`);
    }
  }
}

export interface SdkStackOptions {
  /** Top-level keys merged into the router config file (e.g. `port`, `metricsPort` for a PM2-run router). */
  readonly config?: Readonly<Record<string, unknown>>;
}

export async function startSdkStack(options: SdkStackOptions = {}): Promise<SdkStack> {
  const routerWallet = Wallet.createRandom();
  const mnemonic = routerWallet.mnemonic?.phrase;
  if (!mnemonic) throw new Error("random wallet without mnemonic");
  const router = routerWallet.address;
  const stack = await startStack({ chainIds: [CHAIN1, SENDING, RECEIVING], routerSigner: router });
  const dir = mkdtempSync(join(tmpdir(), "sdk-e2e-"));
  const processes = new Map<string, ManagedProcess>();
  const subgraphs = new Map<number, SubgraphServer>();
  let redis: Redis | undefined;
  const stopAll = async (): Promise<void> => {
    await Promise.allSettled([...processes.values()].map((proc) => proc.stop()));
    await Promise.allSettled([...subgraphs.values()].map((server) => server.stop()));
    redis?.disconnect();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (!stack.redis || !stack.nats) throw new Error("stack without redis or nats");
    const [chain1, sending, receiving] = [stack.chain(CHAIN1), stack.chain(SENDING), stack.chain(RECEIVING)];
    for (const chain of [sending, receiving]) {
      await chain.anvil.setBalance(router, parseEther("100"));
      const funder = anvilWallet(3, chain.provider);
      await mintToken(chain.deployment, funder.address, LIQUIDITY);
      await fundRouterLiquidity({
        deployment: chain.deployment,
        funder,
        router,
        assetId: chain.deployment.token,
        amount: LIQUIDITY,
      });
      await fundRouterLiquidity({
        deployment: chain.deployment,
        funder,
        router,
        assetId: ZeroAddress,
        amount: NATIVE_LIQUIDITY,
      });
      // Native and TEST at the same price: the auction's gas fee (and the relayer-fee check) in TEST is the gas cost in wei.
      await sendTx(chain.deployment.contracts.priceOracle, "setDirectPrice", [ZeroAddress, ORACLE_PRICE]);
      await sendTx(chain.deployment.contracts.priceOracle, "setDirectPrice", [chain.deployment.token, ORACLE_PRICE]);
      subgraphs.set(
        chain.chainId,
        await startSubgraphServer({
          rpcUrl: chain.anvil.url,
          chainId: chain.chainId,
          transactionManager: chain.deployment.transactionManager,
        }),
      );
    }
    const prefix = uniquePrefix();
    const authUrl = `http://127.0.0.1:${await getFreePort()}`;
    const entry = (c: StackChain, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      providers: [c.anvil.url],
      transactionManagerAddress: c.deployment.transactionManager,
      priceOracleAddress: c.deployment.priceOracle,
      confirmations: 1,
      ...extra,
    });
    const config = {
      adminToken: "sdk-e2e-admin-token-0123456789abcdef",
      mnemonic,
      logLevel: "info",
      network: "local",
      messagingUrl: stack.nats.url,
      authUrl,
      redisUrl: stack.redis.url,
      redisPrefix: prefix,
      host: "127.0.0.1",
      swapPools: [
        {
          name: "TEST",
          assets: [
            { chainId: SENDING, assetId: sending.deployment.token },
            { chainId: RECEIVING, assetId: receiving.deployment.token },
          ],
        },
        {
          name: "ETH",
          assets: [
            { chainId: SENDING, assetId: ZeroAddress },
            { chainId: RECEIVING, assetId: ZeroAddress },
          ],
        },
      ],
      chainConfig: {
        [String(CHAIN1)]: entry(chain1),
        [String(SENDING)]: entry(sending),
        [String(RECEIVING)]: entry(receiving, { allowRelay: true }),
      },
      ...options.config,
    };
    const configFile = join(dir, "config.json");
    writeFileSync(configFile, JSON.stringify(config));
    redis = new Redis(stack.redis.url);
    const store = createTransferStore(redis, prefix);
    const spawn = (name: string, main: string, env: readonly string[] = []): ManagedProcess => {
      const proc = spawnRouterProcess({ name, main, configFile, env });
      processes.set(name, proc);
      return proc;
    };
    const spawnPoller = async (): Promise<ManagedProcess> => {
      const spawnedAtMs = Date.now();
      const chainIds = [SENDING, RECEIVING];
      // The shipped poll interval (no POLLER_INTERVAL_MS): the SDK's relayed fulfill must not depend on a fast poller.
      // The shipped start too (no POLLER_START_BLOCK: head − 100 000, all of a fresh stack's blocks, none of them a
      // transfer yet), since one start block would serve both chains.
      const proc = spawn("poller", "poller/main.js", [`CHAIN_ID=${chainIds.join(",")}`]);
      const stored = async (chainId: number): Promise<boolean> =>
        ((await store.getHead(chainId))?.updatedAtMs ?? 0) > spawnedAtMs;
      await waitForReady(proc, async () => (await Promise.all(chainIds.map(stored))).every(Boolean), 20_000);
      return proc;
    };
    return {
      stack,
      sending,
      receiving,
      router,
      subgraphs,
      authUrl,
      configFile,
      prefix,
      redis,
      processes,
      spawn,
      spawnPoller,
      outputTails: () =>
        [
          ...[...subgraphs].map(
            ([chainId, server]) =>
              `--- subgraph ${chainId}: ${server.errors().length} failed requests ---\n${server.errors().slice(-5).join("\n")}`,
          ),
          ...[...processes.values()].map((proc) => `--- ${proc.name} (last output) ---\n${proc.outputTail()}`),
        ].join("\n"),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** `owner`'s balance of `assetId` on `chain` (TEST by default; the zero address is the native asset). */
export function tokenBalance(chain: StackChain, owner: string, assetId = chain.deployment.token): Promise<bigint> {
  return assetId === ZeroAddress
    ? chain.provider.getBalance(owner)
    : readBigInt(nxtpContractAt("ERC20", assetId, chain.provider), "balanceOf", [owner]);
}

/** TransactionManager.routerBalances(router, assetId) on `chain` (TEST by default). */
export function routerLiquidity(chain: StackChain, router: string, assetId = chain.deployment.token): Promise<bigint> {
  return readBigInt(chain.deployment.contracts.transactionManager, "routerBalances", [router, assetId]);
}

/** A fresh user holding USER_TOKENS TEST on the sending chain (and anvil's default native balance on both). */
export async function fundedUser(s: SdkStack): Promise<Wallet> {
  const user = Wallet.createRandom();
  for (const chain of [s.sending, s.receiving]) await chain.anvil.setBalance(user.address, parseEther("10"));
  await mintToken(s.sending.deployment, user.address, USER_TOKENS);
  return new Wallet(user.privateKey);
}

export interface StatusResponse {
  readonly routerAddress: string;
  readonly signerAddress: string;
  readonly supportedChains: number[];
  readonly [field: string]: unknown;
}

/**
 * Starts the router as real processes: submitter per swap chain, the poller and the messaging auth service side by
 * side, then (the auth service answering) the auction, the only one that signs in. Resolves once every poller stored
 * a head and the auction answered a status request over NATS (so it is subscribed before the SDK asks for a quote);
 * returns that status answer.
 */
export async function startRouterProcesses(s: SdkStack): Promise<StatusResponse> {
  for (const chainId of [SENDING, RECEIVING])
    s.spawn(`submitter-${chainId}`, "submitter/main.js", [`CHAIN_ID=${chainId}`]);
  const poller = s.spawnPoller();
  poller.catch(() => undefined); // awaited below; the auth service's failure may come first
  await startAuthProcess(s);
  const auction = s.spawn("auction", "auction/main.js");
  await poller;
  let status: StatusResponse | undefined;
  await waitForReady(
    auction,
    async () => {
      status = await requestStatus(s.stack.nats?.url ?? "", 500);
      return status !== undefined;
    },
    20_000,
  );
  return status as StatusResponse;
}

/** Starts the messaging auth service at s.authUrl (a child process) and resolves once it answers. */
export async function startAuthProcess(s: SdkStack): Promise<ManagedProcess> {
  const auth = s.spawn("messaging-auth", "messaging-auth/main.js", [
    `MESSAGING_AUTH_PORT=${new URL(s.authUrl).port}`,
    "MESSAGING_AUTH_LOG_LEVEL=warn",
  ]);
  await waitForReady(auth, async () => (await fetch(`${s.authUrl}/auth/${s.router}`)).ok, 15_000);
  return auth;
}

/**
 * One `status.request` as the SDK sends it (docs/protocol.md#status); the first answer, or undefined after `waitMs`.
 */
async function requestStatus(natsUrl: string, waitMs: number): Promise<StatusResponse | undefined> {
  const nc = await connect({ servers: natsUrl });
  try {
    const me = getAddress(Wallet.createRandom().address);
    const inbox = `_INBOX.${uniquePrefix()}`;
    const sub = nc.subscribe(`${me}.*.status.response`, { timeout: waitMs });
    nc.publish(
      `${me}.${me}.status.request`,
      JSON.stringify({ responseInbox: inbox, data: { requestee: me }, version: "0.0.1", error: null }),
    );
    try {
      for await (const msg of sub) {
        const envelope = JSON.parse(new TextDecoder().decode(msg.data)) as {
          responseInbox: string;
          data: StatusResponse;
        };
        if (envelope.responseInbox === inbox) return envelope.data;
      }
    } catch {
      return undefined; // the subscription's timeout: nobody answered yet
    }
    return undefined;
  } finally {
    await nc.close();
  }
}
