import { NonceManager, Wallet, ZeroAddress, parseEther, type JsonRpcProvider } from "ethers";
import { anvilProvider, anvilWallet } from "./anvil-accounts";
import { deployNxtp, fundRouterLiquidity, sendTx, type NxtpDeployment } from "./deploy-nxtp";

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

/** Gas for the router's signer on every chain (its submitters send from it). */
export async function fundSignerGas(chain: LocalChainHandle, signer: string): Promise<void> {
  const tx = await anvilWallet(1, chain.provider).sendTransaction({ to: signer, value: SIGNER_GAS_WEI });
  await tx.wait();
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
  await (await payer.sendTransaction({ to: user.address, value: USER_GAS_WEI })).wait();
  if (withToken) {
    await sendTx(chain.deployment.contracts.token.connect(payer) as typeof chain.deployment.contracts.token, "mint", [
      user.address,
      USER_TOKEN_WEI,
    ]);
  }
}
