import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonRpcProvider, Wallet } from "ethers";
import { anvilProvider, anvilWallet, startAnvil, type Anvil } from "./anvil";
import { liveChildPids } from "./child-process";
import { deployNxtpCached } from "./chain-state-cache";
import type { NxtpDeployment } from "./deploy";
import { startNats, type NatsServer } from "./nats";
import { startRedis, type RedisServer } from "./redis";
import { settlesWithin, withTimeout } from "../../shared/timing";

export interface StartStackOptions {
  readonly chainIds: readonly number[];
  /** Default true. */
  readonly redis?: boolean;
  /** Default true. */
  readonly nats?: boolean;
  /** Router signer address approved on every TransactionManager; default anvil account 1. */
  readonly routerSigner?: string;
  /** Also create and approve a router contract for the router signer on every chain. */
  readonly withRouterContract?: { readonly recipient: string };
}

export interface StackChain {
  readonly chainId: number;
  readonly anvil: Anvil;
  readonly provider: JsonRpcProvider;
  /** Anvil account 0: owner of every contract. */
  readonly deployer: Wallet;
  readonly deployment: NxtpDeployment;
}

export interface Stack {
  readonly redis?: RedisServer;
  readonly nats?: NatsServer;
  readonly chains: ReadonlyMap<number, StackChain>;
  readonly routerSigner: string;
  /** Throws for a chain id the stack was not started with. */
  chain(chainId: number): StackChain;
  /** Stops every service; idempotent, never throws. */
  stop(): Promise<void>;
}

interface Stoppable {
  stop(): Promise<void>;
}

async function stopAll(items: readonly Stoppable[], providers: readonly JsonRpcProvider[]): Promise<void> {
  for (const provider of providers) {
    provider.destroy();
  }
  // allSettled: one stuck service must not keep the others alive.
  await Promise.allSettled(items.map((item) => item.stop()));
}

/**
 * Above a loaded machine's slowest stack start with its funding (a few seconds alone), and below jest's default
 * 60 s bound (jest.config.js), which most beforeAlls that start a stack run under, with room for the clean-up (a
 * stop takes at most 5 s, all side by side). A suite that needs longer passes its own deadline.
 */
export const STACK_START_DEADLINE_MS = 45_000;
/** How long a failed start waits for the servers still starting, to stop them too (their own waits are bounded). */
const ABANDON_WAIT_MS = 8_000;

/** Settles all starts; if any failed, rethrows the first failure (the caller stops the ones that came up). */
export async function allOrFirstFailure<T>(starts: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(starts);
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failure) throw failure.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/**
 * Stops every server a failed start brought up, and each one still starting once it is up (its readiness wait is
 * bounded); waits for all of that up to ABANDON_WAIT_MS.
 */
async function abandon(starts: readonly Promise<Stoppable>[], providers: readonly JsonRpcProvider[]): Promise<void> {
  for (const provider of providers) {
    provider.destroy();
  }
  const stops = starts.map((start) => start.then((server) => server.stop()).catch(() => undefined));
  await settlesWithin(Promise.all(stops), ABANDON_WAIT_MS);
}

export async function startStack(opts: StartStackOptions): Promise<Stack> {
  return startStackAnd(opts, async (stack) => stack);
}

/**
 * Starts a stack and runs `prepare` over it (funding, approvals, …), all within `deadlineMs`. When a server's
 * start, a deploy or `prepare` fails, or the deadline passes first, it stops everything the stack started before
 * it throws, naming the step it was at: jest's own beforeAll timeout stops nothing (the start runs on, its
 * children outlive the file and fail the next files' leak checks).
 */
export async function startStackAnd<T>(
  opts: StartStackOptions,
  prepare: (stack: Stack) => Promise<T>,
  deadlineMs: number = STACK_START_DEADLINE_MS,
): Promise<T> {
  if (new Set(opts.chainIds).size !== opts.chainIds.length || opts.chainIds.length === 0) {
    throw new Error(`startStack: chainIds must be non-empty and distinct, got [${opts.chainIds.join(", ")}]`);
  }
  const anvilStarts = opts.chainIds.map((chainId) => startAnvil({ chainId }));
  const redisStart = opts.redis === false ? undefined : startRedis();
  const natsStart = opts.nats === false ? undefined : startNats();
  // One flat list so a failure anywhere stops everything that did come up.
  const starts: Promise<Stoppable>[] = [
    ...anvilStarts,
    ...(redisStart ? [redisStart] : []),
    ...(natsStart ? [natsStart] : []),
  ];
  const providers: JsonRpcProvider[] = [];
  let step = `starting anvil (chains ${opts.chainIds.join(", ")})${redisStart ? ", redis" : ""}${natsStart ? ", nats" : ""}`;

  const run = async (): Promise<T> => {
    const services = await allOrFirstFailure(starts);
    const anvils = await Promise.all(anvilStarts);
    providers.push(...anvils.map((anvil) => anvilProvider(anvil.url, anvil.chainId)));
    step = `deploying NXTP on chains ${opts.chainIds.join(", ")}`;
    const routerSigner = opts.routerSigner ?? anvilWallet(1).address;
    const built = await Promise.all(
      anvils.map(async (anvil, i): Promise<StackChain> => {
        const provider = providers[i];
        const deployer = anvilWallet(0, provider);
        const deployment = await deployNxtpCached({
          anvil,
          deployer,
          routerSigner,
          withRouterContract: opts.withRouterContract,
        });
        return { chainId: anvil.chainId, anvil, provider, deployer, deployment };
      }),
    );
    const stack = stackOf({
      redis: redisStart ? await redisStart : undefined,
      nats: natsStart ? await natsStart : undefined,
      chains: new Map(built.map((c) => [c.chainId, c])),
      routerSigner,
      stop: () => stopAll(services, providers),
    });
    step = "preparing the stack (funding, approvals)";
    return prepare(stack);
  };

  try {
    return await withTimeout(
      run(),
      deadlineMs,
      () => new Error(`stack start did not finish within ${deadlineMs} ms (at: ${step})`),
    );
  } catch (err) {
    await abandon(starts, providers);
    throw err;
  }
}

function stackOf(p: {
  readonly redis?: RedisServer;
  readonly nats?: NatsServer;
  readonly chains: ReadonlyMap<number, StackChain>;
  readonly routerSigner: string;
  readonly stop: () => Promise<void>;
}): Stack {
  let stopping: Promise<void> | undefined;
  return {
    redis: p.redis,
    nats: p.nats,
    chains: p.chains,
    routerSigner: p.routerSigner,
    chain: (chainId) => {
      const found = p.chains.get(chainId);
      if (!found) {
        throw new Error(`stack has no chain ${chainId} (started: ${[...p.chains.keys()].join(", ")})`);
      }
      return found;
    },
    stop: () => {
      stopping ??= p.stop().catch(() => undefined);
      return stopping;
    },
  };
}

/** What a suite adds to its stack: a scratch directory and each test's clean-up. */
export interface SuiteExtras {
  /** The suite's own temporary directory (config files, logs), removed after the suite. */
  readonly scratchDir: string;
  /** Runs `cleanup` after the current test (from a beforeEach: the test about to run), newest first. */
  afterTest(cleanup: () => unknown): void;
  /** `x`, stopped after the current test. */
  stopAfterTest<T extends Stoppable>(x: T): T;
}

export interface UseStackParams<S, T> {
  /** Names the scratch directory. */
  readonly name: string;
  readonly start: () => Promise<S>;
  readonly stop: (s: S) => Promise<void>;
  /** State of one test (a Redis prefix, its queues, a log capture …), built before it; may register clean-ups. */
  readonly eachTest?: (s: S, suite: SuiteExtras) => T | Promise<T>;
}

/** The stack's fields, the current test's state and the suite's extras, read through one object. */
export type Suite<S, T = object> = S & T & SuiteExtras;

/** Starting the stacks runs several anvils, a deploy per chain and funding: far above jest's default bound. */
const STACK_START_TIMEOUT_MS = 120_000;

/**
 * The one set-up of the suites that run over a stack (the poller, fault and takeover tests): registers the jest
 * hooks that start the stack once before all tests, build each test's state before it, run the clean-ups a test
 * registered after it (all of them, newest first, even when one fails), then stop the stack, remove the scratch
 * directory and check that no child process outlived the suite. Call it in a describe block.
 *
 * The returned object reads through to the stack (and the current test's state) once started, so a suite passes
 * it wherever its stack type is expected and reads `s.sending` or `s.prefix` without a `let` per field.
 */
export function useStack<S extends object, T extends object = object>(p: UseStackParams<S, T>): Suite<S, T> {
  let stack: S | undefined;
  let current: T | undefined;
  let testKeys = new Set<PropertyKey>();
  let scratchDir: string | undefined;
  /** Newest last. A group's clean-ups run together: processes a test started one after another stop side by side. */
  let cleanups: Array<{ readonly stops: boolean; readonly group: Array<() => unknown> }> = [];
  const register = (cleanup: () => unknown, stops: boolean): void => {
    const last = cleanups.at(-1);
    if (stops && last?.stops) last.group.push(cleanup);
    else cleanups.push({ stops, group: [cleanup] });
  };
  const runCleanups = async (): Promise<void> => {
    const pending = cleanups.reverse();
    cleanups = [];
    const failures: unknown[] = [];
    for (const { group } of pending) {
      const outcomes = await Promise.allSettled(group.map(async (cleanup) => cleanup()));
      for (const o of outcomes) if (o.status === "rejected") failures.push(o.reason);
    }
    if (failures.length > 0) throw failures[0];
  };
  const extras: SuiteExtras = {
    get scratchDir(): string {
      if (scratchDir === undefined) throw new Error(`${p.name}: scratchDir read before the suite started`);
      return scratchDir;
    },
    afterTest: (cleanup) => register(cleanup, false),
    stopAfterTest: (x) => {
      register(() => x.stop(), true);
      return x;
    },
  };

  beforeAll(async () => {
    scratchDir = mkdtempSync(join(tmpdir(), `${p.name}-`));
    stack = await p.start();
  }, STACK_START_TIMEOUT_MS);
  beforeEach(async () => {
    if (!p.eachTest || !stack) return;
    current = await p.eachTest(stack, extras);
    testKeys = new Set(Reflect.ownKeys(current));
  });
  afterEach(async () => {
    current = undefined;
    await runCleanups();
  });
  afterAll(async () => {
    await runCleanups().finally(async () => {
      if (stack) await p.stop(stack);
      if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
    });
    expect(liveChildPids()).toEqual([]);
  });

  /** Where `prop` is read from: the extras, the current test's state, then the stack. */
  const ownerOf = (prop: PropertyKey): object | undefined => {
    if (prop in extras) return extras;
    if (testKeys.has(prop)) {
      if (!current) throw new Error(`${p.name}: ${String(prop)} is a test's state, read outside a test`);
      return current;
    }
    return stack;
  };
  return new Proxy(extras, {
    get: (_target, prop) => {
      const owner = ownerOf(prop);
      if (owner) return Reflect.get(owner, prop);
      // `then` is probed by await; symbols by inspection: neither means the stack is wanted.
      if (prop === "then" || typeof prop === "symbol") return undefined;
      throw new Error(`${p.name}: ${String(prop)} read before the stack started`);
    },
    has: (_target, prop) => prop in extras || testKeys.has(prop) || (stack !== undefined && prop in stack),
    // Spreading it (`{ ...s, redisUrl }`) copies the stack's fields and the test's, as it would a plain stack.
    ownKeys: () => [
      ...new Set([
        ...Reflect.ownKeys(stack ?? {}),
        ...(current ? Reflect.ownKeys(current) : []),
        ...Reflect.ownKeys(extras),
      ]),
    ],
    getOwnPropertyDescriptor: (_target, prop) => {
      const owner = ownerOf(prop);
      if (!owner || !Object.prototype.hasOwnProperty.call(owner, prop)) return undefined;
      return { value: Reflect.get(owner, prop), enumerable: true, configurable: true, writable: false };
    },
  }) as Suite<S, T>;
}
