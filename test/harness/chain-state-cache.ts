import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Wallet } from "ethers";
import { packageArtifact, type NxtpContractName } from "../../scripts/nxtp-package";
import { anvilBinary, type Anvil } from "./anvil";
import { approveNxtpRouter, deployNxtpContracts, type NxtpContractAddresses, type NxtpDeployment } from "./deploy";

/**
 * The NXTP contracts, deployed once per chain id and reused as anvil state: a stack start loads the chain as it
 * stood after `deployNxtpContracts` (anvil_loadState restores the blocks, transactions, nonces and storage, so the
 * chain's history is the one a fresh deploy leaves) and sends only the router's approval. A deploy is ten
 * transactions signed in JS per chain, 5-7 s per three-chain stack on a loaded machine (load 6-8 on 2 cores),
 * paid by some seventy test files; a load takes about 0.1 s (the stack 0.4 s in all).
 *
 * The state files live in the OS temp directory under a key of everything the state depends on (chain id, the
 * contracts' bytecode, the deployer, the anvil binary, the deploy's source), so a change to any makes a new one.
 * TEST_CHAIN_STATE_CACHE=0 deploys every time. Each RPC is bounded by the harness's anvil client (test/harness/anvil.ts).
 */
const CACHE_DIR = join(tmpdir(), "nxtp-router-chain-state");
/** What the deploy does is part of the key: an edit of it makes a new state. */
const DEPLOY_SOURCE = join(__dirname, "../../scripts/local/deploy-nxtp.ts");
const CONTRACTS: readonly NxtpContractName[] = [
  "TransactionManager",
  "TestERC20",
  "ConnextPriceOracle",
  "Multicall",
  "RouterFactory",
];

interface CachedState {
  readonly addresses: NxtpContractAddresses;
  /** anvil_dumpState's answer, as anvil_loadState takes it. */
  readonly state: string;
}

function cacheFile(chainId: number, deployer: string): string {
  const anvil = anvilBinary();
  const { size, mtimeMs } = statSync(anvil);
  const hash = createHash("sha256").update(`${chainId}|${deployer}|${anvil}|${size}|${mtimeMs}|`);
  hash.update(readFileSync(DEPLOY_SOURCE));
  for (const name of CONTRACTS) hash.update(packageArtifact(name).bytecode);
  return join(CACHE_DIR, `chain-${chainId}-${hash.digest("hex").slice(0, 16)}.json`);
}

function readCached(file: string): CachedState | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<CachedState>;
    return parsed.addresses && typeof parsed.state === "string" ? (parsed as CachedState) : undefined;
  } catch {
    return undefined; // a torn or foreign file: deploy afresh and overwrite it
  }
}

/** Written to a file of its own and renamed into place: two workers writing at once leave one whole file. */
function writeCached(file: string, cached: CachedState): void {
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, JSON.stringify(cached));
  renameSync(tmp, file);
}

/**
 * The NXTP deployment on a fresh `anvil` (nothing mined on it yet), for `routerSigner`: from the cached state when
 * there is one, else deployed and then cached.
 */
export async function deployNxtpCached(p: {
  readonly anvil: Anvil;
  readonly deployer: Wallet;
  readonly routerSigner: string;
  readonly withRouterContract?: { readonly recipient: string };
}): Promise<NxtpDeployment> {
  const { anvil, deployer } = p;
  const useCache = process.env.TEST_CHAIN_STATE_CACHE !== "0";
  const file = cacheFile(anvil.chainId, deployer.address);
  const cached = useCache ? readCached(file) : undefined;
  let addresses: NxtpContractAddresses;
  if (cached) {
    await anvil.rpc<boolean>("anvil_loadState", [cached.state]);
    addresses = cached.addresses;
  } else {
    addresses = await deployNxtpContracts({ rpcUrl: anvil.url, chainId: anvil.chainId, deployer });
    if (useCache) {
      const state = await anvil.rpc<string>("anvil_dumpState");
      writeCached(file, { addresses, state });
    }
  }
  return approveNxtpRouter(addresses, p);
}
