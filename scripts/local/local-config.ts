import { Wallet, ZeroAddress } from "ethers";
import { RECEIVING_CHAIN_ID, SENDING_CHAIN_ID, type LocalChainHandle } from "./chains";

/**
 * The router config `npm run local` writes to .local/config.json (the operator's config.json is never
 * touched). Chain 1 plays mainnet: its ConnextPriceOracle prices the test token (through `mainnetEquivalent`)
 * and ETH (through `nativeMainnetEquivalent` = address(0), the oracle's native entry), so bids carry a real
 * gas fee. Chains 1337 → 1338 carry the swaps, in one pool of the test token and one of native ETH.
 */
export interface LocalChain {
  readonly chainId: number;
  readonly rpcUrl: string;
  readonly transactionManager: string;
  readonly multicall: string;
  /** Only chain 1's is configured: every price is read there. */
  readonly priceOracle?: string;
  readonly token: string;
}

export interface LocalConfigParams {
  readonly mnemonic: string;
  readonly adminToken: string;
  readonly adminPort: number;
  readonly redisUrl: string;
  readonly messagingUrl: string;
  readonly authUrl: string;
  /** The ledger's database (the local PostgreSQL); absent: no ledger section, the books are off. */
  readonly ledgerDatabaseUrl?: string;
  readonly mainnet: LocalChain;
  readonly swapChains: readonly LocalChain[];
}

export const LOCAL_REDIS_PREFIX = "local";

/**
 * The PM2 apps ecosystem.config.js starts for this config. Chain 1 is in no swap pool (gas pricing only), so it
 * gets no submitter and no poller (docs/scaling.md); one `poller` app polls both swap chains, or with
 * POLLER_PROCESS_PER_CHAIN=1 (read by ecosystem.config.js from the same environment) one `poller-<id>` per chain.
 */
export const LOCAL_ROUTER_APPS: readonly string[] = [
  "admin",
  "auction",
  "ledger",
  ...[SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map((id) => `submitter-${id}`),
  ...(process.env.POLLER_PROCESS_PER_CHAIN === "1"
    ? [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map((id) => `poller-${id}`)
    : ["poller"]),
];

/** A deployed local chain as the config names it. */
export function localChainOf(chain: LocalChainHandle): LocalChain {
  return {
    chainId: chain.chainId,
    rpcUrl: chain.rpcUrl,
    transactionManager: chain.deployment.transactionManager,
    multicall: chain.deployment.multicall,
    priceOracle: chain.deployment.priceOracle,
    token: chain.deployment.token,
  };
}

/** A new random signer for the router: its address (funded on the chains) and the mnemonic the config holds. */
export function freshRouterSigner(): { readonly address: string; readonly mnemonic: string } {
  const wallet = Wallet.createRandom();
  const mnemonic = wallet.mnemonic?.phrase;
  if (!mnemonic) throw new Error("a fresh wallet came without a mnemonic");
  return { address: wallet.address, mnemonic };
}

export function localConfigJson(p: LocalConfigParams): Record<string, unknown> {
  const mainnetToken = p.mainnet.token;
  const chainEntry = (c: LocalChain, extra: Record<string, unknown>): Record<string, unknown> => ({
    providers: [c.rpcUrl],
    transactionManagerAddress: c.transactionManager,
    multicallAddress: c.multicall,
    ...extra,
  });
  return {
    network: "local",
    adminToken: p.adminToken,
    mnemonic: p.mnemonic,
    logLevel: "info",
    host: "127.0.0.1",
    port: p.adminPort,
    redisUrl: p.redisUrl,
    redisPrefix: LOCAL_REDIS_PREFIX,
    messagingUrl: p.messagingUrl,
    authUrl: p.authUrl,
    ...(p.ledgerDatabaseUrl === undefined ? {} : { ledger: { databaseUrl: p.ledgerDatabaseUrl } }),
    swapPools: [
      {
        name: "TEST",
        assets: p.swapChains.map((c) => ({ chainId: c.chainId, assetId: c.token, mainnetEquivalent: mainnetToken })),
      },
      {
        name: "ETH",
        assets: p.swapChains.map((c) => ({ chainId: c.chainId, assetId: ZeroAddress, mainnetEquivalent: ZeroAddress })),
      },
    ],
    chainConfig: Object.fromEntries([
      // Chain 1 keeps its recommended confirmations: nothing is swapped there, it only answers price reads.
      [String(p.mainnet.chainId), chainEntry(p.mainnet, { priceOracleAddress: p.mainnet.priceOracle })],
      ...p.swapChains.map((c) => [
        String(c.chainId),
        chainEntry(c, { confirmations: 1, nativeMainnetEquivalent: ZeroAddress }),
      ]),
    ]),
  };
}
