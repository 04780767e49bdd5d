import type { JsonRpcProvider, Wallet } from "ethers";
import { anvilProvider, anvilWallet, startAnvil, type Anvil } from "./anvil";
import { deployNxtp, type NxtpDeployment } from "./deploy";
import { startNats, type NatsServer } from "./nats";
import { startRedis, type RedisServer } from "./redis";

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

/** Settles all starts; if any failed, stops the ones that came up and rethrows the first failure. */
async function startAllOrNone<T extends Stoppable>(starts: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(starts);
  const started = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failure) {
    await stopAll(started, []);
    throw failure.reason;
  }
  return started;
}

export async function startStack(opts: StartStackOptions): Promise<Stack> {
  if (new Set(opts.chainIds).size !== opts.chainIds.length || opts.chainIds.length === 0) {
    throw new Error(`startStack: chainIds must be non-empty and distinct, got [${opts.chainIds.join(", ")}]`);
  }
  const anvilStarts = opts.chainIds.map((chainId) => startAnvil({ chainId }));
  const redisStart = opts.redis === false ? undefined : startRedis();
  const natsStart = opts.nats === false ? undefined : startNats();
  // One flat list so a failure anywhere stops everything that did come up.
  const services = await startAllOrNone<Stoppable>([
    ...anvilStarts,
    ...(redisStart ? [redisStart] : []),
    ...(natsStart ? [natsStart] : []),
  ]);
  // All settled successfully above, so these awaits are immediate.
  const anvils = await Promise.all(anvilStarts);
  const redis = redisStart ? await redisStart : undefined;
  const nats = natsStart ? await natsStart : undefined;
  const providers = anvils.map((anvil) => anvilProvider(anvil.url, anvil.chainId));
  const routerSigner = opts.routerSigner ?? anvilWallet(1).address;

  let chains: Map<number, StackChain>;
  try {
    const built = await Promise.all(
      anvils.map(async (anvil, i): Promise<StackChain> => {
        const provider = providers[i];
        const deployer = anvilWallet(0, provider);
        const deployment = await deployNxtp({
          rpcUrl: anvil.url,
          chainId: anvil.chainId,
          deployer,
          routerSigner,
          withRouterContract: opts.withRouterContract,
        });
        return { chainId: anvil.chainId, anvil, provider, deployer, deployment };
      }),
    );
    chains = new Map(built.map((c) => [c.chainId, c]));
  } catch (err) {
    await stopAll(services, providers);
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    redis,
    nats,
    chains,
    routerSigner,
    chain: (chainId) => {
      const found = chains.get(chainId);
      if (!found) {
        throw new Error(`stack has no chain ${chainId} (started: ${[...chains.keys()].join(", ")})`);
      }
      return found;
    },
    stop: () => {
      stopping ??= stopAll(services, providers).catch(() => undefined);
      return stopping;
    },
  };
}
