import { NonceManager, Wallet, ZeroAddress, parseEther, type JsonRpcProvider, type Signer } from "ethers";
import { anvilProvider, anvilWallet } from "./anvil-accounts";
import { deployNxtp, fundRouterLiquidity, sendTx, type NxtpDeployment } from "./deploy-nxtp";
import { waitForReceipt } from "./receipts";

/**
 * The local chains' contents: the real NXTP contracts and a test token on each, chain 1's oracle prices,
 * the router's gas and liquidity, and a demo user. Every transaction waits for its receipt (anvil automines).
 * Accounts: anvil 0 deploys, anvil 1 pays gas and liquidity, anvil 2 funds the demo user.
 */
export const MAINNET_CHAIN_ID = 1;
export const SENDING_CHAIN_ID = 1337;
export const RECEIVING_CHAIN_ID = 1338;
export const LOCAL_CHAIN_IDS = [MAINNET_CHAIN_ID, SENDING_CHAIN_ID, RECEIVING_CHAIN_ID] as const;

/** USD × 1e18 on chain 1's ConnextPriceOracle: the gas fee converts ETH to TEST at this ratio. */
export const TOKEN_PRICE_WEI = parseEther("1");
export const ETH_PRICE_WEI = parseEther("3000");
export const SIGNER_GAS_WEI = parseEther("10");
export const TOKEN_LIQUIDITY_WEI = parseEther("100000");
export const NATIVE_LIQUIDITY_WEI = parseEther("100");
export const USER_GAS_WEI = parseEther("10");
export const USER_TOKEN_WEI = parseEther("1000");

export interface LocalChainHandle {
  readonly chainId: number;
  readonly rpcUrl: string;
  readonly provider: JsonRpcProvider;
  readonly deployment: NxtpDeployment;
}

export async function deployChain(chainId: number, rpcUrl: string, routerSigner: string): Promise<LocalChainHandle> {
  const provider = anvilProvider(rpcUrl, chainId);
  const deployment = await deployNxtp({ rpcUrl, chainId, deployer: anvilWallet(0, provider), routerSigner });
  return { chainId, rpcUrl, provider, deployment };
}

/** Prices the test token (the pool's mainnet equivalent) and ETH (the oracle's address(0) entry). */
export async function setMainnetPrices(chain: LocalChainHandle): Promise<void> {
  const oracle = chain.deployment.contracts.priceOracle;
  await sendTx(oracle, "setDirectPrice", [chain.deployment.token, TOKEN_PRICE_WEI]);
  await sendTx(oracle, "setDirectPrice", [ZeroAddress, ETH_PRICE_WEI]);
}

/** A plain native transfer, its receipt awaited with a bound. */
async function sendNative(payer: Signer, to: string, value: bigint): Promise<void> {
  const tx = await payer.sendTransaction({ to, value });
  await waitForReceipt({ provider: tx.provider, hash: tx.hash, what: `transfer to ${to}`, chainId: tx.chainId });
}

/** Gas for the router's signer on every chain (its submitters send from it). */
export async function fundSignerGas(chain: LocalChainHandle, signer: string): Promise<void> {
  await sendNative(anvilWallet(1, chain.provider), signer, SIGNER_GAS_WEI);
}

/** Token and native liquidity for the router on a swap chain, paid by anvil account 1 (mints TEST first). */
export async function addRouterLiquidity(chain: LocalChainHandle, router: string): Promise<void> {
  const funder = new NonceManager(anvilWallet(1, chain.provider));
  await sendTx(chain.deployment.contracts.token.connect(funder) as typeof chain.deployment.contracts.token, "mint", [
    await funder.getAddress(),
    TOKEN_LIQUIDITY_WEI,
  ]);
  const deployment = chain.deployment;
  await fundRouterLiquidity({ deployment, funder, router, assetId: deployment.token, amount: TOKEN_LIQUIDITY_WEI });
  await fundRouterLiquidity({ deployment, funder, router, assetId: ZeroAddress, amount: NATIVE_LIQUIDITY_WEI });
}

/** The demo user: gas on both swap chains, TEST on the sending chain. */
export async function fundUser(chain: LocalChainHandle, user: Wallet, withToken: boolean): Promise<void> {
  const payer = new NonceManager(anvilWallet(2, chain.provider));
  await sendNative(payer, user.address, USER_GAS_WEI);
  if (withToken) {
    await sendTx(chain.deployment.contracts.token.connect(payer) as typeof chain.deployment.contracts.token, "mint", [
      user.address,
      USER_TOKEN_WEI,
    ]);
  }
}

/** The NXTP contracts and the test token on each of LOCAL_CHAIN_IDS, at its RPC URL, in parallel. */
export async function deployLocalChains(
  rpcUrls: ReadonlyMap<number, string>,
  routerSigner: string,
  progress: (line: string) => void = () => undefined,
): Promise<Map<number, LocalChainHandle>> {
  const deployed = await Promise.all(
    LOCAL_CHAIN_IDS.map(async (id) => {
      const chain = await deployChain(id, rpcUrls.get(id) as string, routerSigner);
      progress(
        `chain ${id}: TransactionManager ${chain.deployment.transactionManager}, TEST ${chain.deployment.token}`,
      );
      return chain;
    }),
  );
  return new Map(deployed.map((c) => [c.chainId, c]));
}

/**
 * Chain 1's prices and the router's gas there; on each swap chain the router's gas and liquidity, and the user's
 * funds when a user is given (TEST on the sending chain). Chain by chain in parallel.
 */
export async function fundLocalChains(
  chains: ReadonlyMap<number, LocalChainHandle>,
  router: string,
  p: { readonly user?: Wallet; readonly progress?: (line: string) => void } = {},
): Promise<void> {
  const chain = (id: number): LocalChainHandle => chains.get(id) as LocalChainHandle;
  const progress = p.progress ?? (() => undefined);
  await Promise.all([
    (async () => {
      await setMainnetPrices(chain(MAINNET_CHAIN_ID));
      await fundSignerGas(chain(MAINNET_CHAIN_ID), router);
      progress("chain 1: ConnextPriceOracle prices TEST at $1 and ETH at $3000; signer gas 10 ETH");
    })(),
    ...[SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map(async (id) => {
      await fundSignerGas(chain(id), router);
      await addRouterLiquidity(chain(id), router);
      if (p.user) await fundUser(chain(id), p.user, id === SENDING_CHAIN_ID);
      progress(`chain ${id}: signer gas 10 ETH, liquidity 100000 TEST + 100 ETH${p.user ? ", user funded" : ""}`);
    }),
  ]);
}
