import {
  Contract,
  ContractFactory,
  ContractTransactionReceipt,
  NonceManager,
  ZeroAddress,
  getAddress,
  type ContractRunner,
  type Overrides,
  type Signer,
} from "ethers";
// Bytecode comes from the dev-dependency package; the router itself only has the vendored ABIs.
import { packageArtifact, type NxtpContractName } from "../nxtp-package";
import { waitForReceipt } from "./receipts";

export interface NxtpContracts {
  readonly transactionManager: Contract;
  readonly token: Contract;
  readonly priceOracle: Contract;
  readonly multicall: Contract;
  readonly routerFactory: Contract;
  readonly routerContract?: Contract;
}

/** Checksummed addresses of one chain's NXTP deployment, plus handles connected to the deployer. */
export interface NxtpDeployment extends NxtpContractAddresses {
  readonly routerSigner: string;
  /** Router contract created by the factory for `routerSigner`, approved on the TransactionManager. */
  readonly routerContract?: string;
  readonly contracts: NxtpContracts;
}

export interface DeployNxtpParams {
  readonly rpcUrl: string;
  readonly chainId: number;
  /** Must be connected to the chain at `rpcUrl`; the chain must mine (automine or interval). */
  readonly deployer: Signer;
  readonly routerSigner: string;
  readonly withRouterContract?: { readonly recipient: string };
}

/** Binds an artifact's ABI to an address. */
export function nxtpContractAt(name: NxtpContractName, address: string, runner: ContractRunner): Contract {
  return new Contract(address, packageArtifact(name).abi, runner);
}

/**
 * Deploys `name` from `deployer` and waits, bounded, for the deployment's receipt, then checks that code is at the
 * address (ethers' waitForDeployment() waits on block events and can miss one for ever).
 */
export async function deployContract(
  name: NxtpContractName,
  deployer: Signer,
  args: readonly unknown[] = [],
): Promise<Contract> {
  const { abi, bytecode } = packageArtifact(name);
  const deployed = await new ContractFactory(abi, bytecode, deployer).deploy(...args);
  const tx = deployed.deploymentTransaction();
  if (!tx) throw new Error(`deploy ${name}: no deployment transaction`);
  const what = `deploy ${name}`;
  const receipt = await waitForReceipt({ provider: tx.provider, hash: tx.hash, what, chainId: tx.chainId });
  const address = receipt.contractAddress ?? (await deployed.getAddress());
  if ((await tx.provider.getCode(address)) === "0x") {
    throw new Error(`${what}: transaction ${tx.hash} on chain ${tx.chainId} left no code at ${address}`);
  }
  return nxtpContractAt(name, address, deployer);
}

/**
 * Sends one transaction and waits, bounded, for its receipt. A revert at estimation surfaces as ethers'
 * CALL_EXCEPTION; a mined status-0 receipt as TransactionRevertedError, a missing one as ReceiptTimeoutError,
 * each naming the method, the transaction and the chain.
 */
export async function sendTx(
  contract: Contract,
  method: string,
  args: readonly unknown[],
  overrides: Overrides = {},
): Promise<ContractTransactionReceipt> {
  const tx = await contract.getFunction(method).send(...args, overrides);
  const receipt = await waitForReceipt({ provider: tx.provider, hash: tx.hash, what: method, chainId: tx.chainId });
  return new ContractTransactionReceipt(contract.interface, tx.provider, receipt);
}

async function readValue(contract: Contract, method: string, args: readonly unknown[]): Promise<unknown> {
  const value: unknown = await contract.getFunction(method).staticCall(...args);
  return value;
}

export async function readBigInt(contract: Contract, method: string, args: readonly unknown[] = []): Promise<bigint> {
  const value = await readValue(contract, method, args);
  if (typeof value !== "bigint") {
    throw new Error(`${method} returned ${typeof value}, expected bigint`);
  }
  return value;
}

export async function readAddress(contract: Contract, method: string, args: readonly unknown[] = []): Promise<string> {
  const value = await readValue(contract, method, args);
  if (typeof value !== "string") {
    throw new Error(`${method} returned ${typeof value}, expected an address`);
  }
  return getAddress(value);
}

async function assertDeployerChain(params: Pick<DeployNxtpParams, "deployer" | "rpcUrl" | "chainId">): Promise<void> {
  const provider = params.deployer.provider;
  if (!provider) {
    throw new Error(`deployNxtp: the deployer must be connected to ${params.rpcUrl}`);
  }
  const { chainId } = await provider.getNetwork();
  if (chainId !== BigInt(params.chainId)) {
    throw new Error(`deployNxtp: deployer is on chain ${chainId}, expected ${params.chainId} at ${params.rpcUrl}`);
  }
}

/** Addresses of the contracts `deployNxtpContracts` left on a chain, before any router is approved. */
export interface NxtpContractAddresses {
  readonly chainId: number;
  readonly transactionManager: string;
  /** FulfillInterpreter, deployed by the TransactionManager's constructor. */
  readonly interpreter: string;
  /** TestERC20 "TEST" (18 decimals); the deployer holds 1 000 000 TEST and anyone may mint. */
  readonly token: string;
  /** ConnextPriceOracle with wrapped = address(0): price native with `setDirectPrice(ZeroAddress, p)`. */
  readonly priceOracle: string;
  readonly multicall: string;
  readonly routerFactory: string;
}

/**
 * Deploys the NXTP v0 contracts and wires what does not depend on a router (the factory's init, the TEST and
 * native assets), each transaction awaited to its receipt. Nonces come from a local NonceManager: ethers'
 * default provider caches `getTransactionCount` for 250 ms, so back-to-back sends through a plain signer reuse a
 * nonce. Split from the router's approval so the test harness can reuse one chain state for any router.
 */
export async function deployNxtpContracts(
  params: Omit<DeployNxtpParams, "routerSigner" | "withRouterContract">,
): Promise<NxtpContractAddresses> {
  const { chainId } = params;
  await assertDeployerChain(params);
  const owner = await params.deployer.getAddress();
  const deployer = new NonceManager(params.deployer);

  const transactionManager = await deployContract("TransactionManager", deployer, [chainId]);
  const token = await deployContract("TestERC20", deployer, []);
  const priceOracle = await deployContract("ConnextPriceOracle", deployer, [ZeroAddress]);
  const multicall = await deployContract("Multicall", deployer, []);
  const routerFactory = await deployContract("RouterFactory", deployer, [owner]);

  const tmAddress = await transactionManager.getAddress();
  const tokenAddress = await token.getAddress();
  await sendTx(routerFactory, "init", [tmAddress]);
  // Without these, addLiquidity reverts "#AL:004" (asset) and prepare "#P:003"; the router comes in approveNxtpRouter.
  await sendTx(transactionManager, "addAssetId", [tokenAddress]);
  await sendTx(transactionManager, "addAssetId", [ZeroAddress]);
  return {
    chainId,
    transactionManager: tmAddress,
    interpreter: await readAddress(transactionManager, "interpreter"),
    token: tokenAddress,
    priceOracle: await priceOracle.getAddress(),
    multicall: await multicall.getAddress(),
    routerFactory: await routerFactory.getAddress(),
  };
}

/**
 * Approves `routerSigner` on the TransactionManager `deployNxtpContracts` deployed (without it addLiquidity
 * reverts "#AL:003"), and, when asked, creates and approves its router contract. The handles use `deployer`.
 */
export async function approveNxtpRouter(
  addresses: NxtpContractAddresses,
  params: Pick<DeployNxtpParams, "deployer" | "routerSigner" | "withRouterContract">,
): Promise<NxtpDeployment> {
  const routerSigner = getAddress(params.routerSigner);
  const at = (name: NxtpContractName, address: string): Contract => nxtpContractAt(name, address, params.deployer);
  // Sent through a NonceManager, as deployNxtpContracts does: back-to-back sends must not reuse a nonce.
  const sender = new NonceManager(params.deployer);
  const transactionManager = nxtpContractAt("TransactionManager", addresses.transactionManager, sender);
  const routerFactory = nxtpContractAt("RouterFactory", addresses.routerFactory, sender);
  await sendTx(transactionManager, "addRouter", [routerSigner]);

  let routerContract: Contract | undefined;
  if (params.withRouterContract) {
    await sendTx(routerFactory, "createRouter", [routerSigner, getAddress(params.withRouterContract.recipient)]);
    const routerAddress = await readAddress(routerFactory, "getRouterAddress", [routerSigner]);
    await sendTx(transactionManager, "addRouter", [routerAddress]);
    routerContract = at("Router", routerAddress);
  }
  return {
    ...addresses,
    routerSigner,
    routerContract: routerContract ? await routerContract.getAddress() : undefined,
    contracts: {
      transactionManager: at("TransactionManager", addresses.transactionManager),
      token: at("TestERC20", addresses.token),
      priceOracle: at("ConnextPriceOracle", addresses.priceOracle),
      multicall: at("Multicall", addresses.multicall),
      routerFactory: at("RouterFactory", addresses.routerFactory),
      routerContract,
    },
  };
}

/** Deploys and wires the NXTP v0 contracts for `routerSigner` (deployNxtpContracts, then approveNxtpRouter). */
export async function deployNxtp(params: DeployNxtpParams): Promise<NxtpDeployment> {
  return approveNxtpRouter(await deployNxtpContracts(params), params);
}

export interface FundRouterLiquidityParams {
  readonly deployment: NxtpDeployment;
  /** Pays: holds the ERC20 (it approves the TransactionManager) or the native amount. */
  readonly funder: Signer;
  readonly router: string;
  /** ZeroAddress for the native asset. */
  readonly assetId: string;
  readonly amount: bigint;
}

/**
 * `addLiquidityFor(amount, assetId, router)`: for native the call must carry msg.value == amount ("#TA:005"),
 * for ERC20 msg.value must be 0 ("#TA:006") and the funder's allowance must cover amount.
 * Returns the router's balance for the asset afterwards.
 */
export async function fundRouterLiquidity(params: FundRouterLiquidityParams): Promise<bigint> {
  const { deployment, funder, amount } = params;
  const assetId = getAddress(params.assetId);
  const router = getAddress(params.router);
  const tm = nxtpContractAt("TransactionManager", deployment.transactionManager, funder);
  if (assetId === ZeroAddress) {
    await sendTx(tm, "addLiquidityFor", [amount, assetId, router], { value: amount });
  } else {
    await sendTx(nxtpContractAt("ERC20", assetId, funder), "approve", [deployment.transactionManager, amount]);
    await sendTx(tm, "addLiquidityFor", [amount, assetId, router]);
  }
  return readBigInt(tm, "routerBalances", [router, assetId]);
}

/** TestERC20.mint is open to anyone; sent by the deployer. */
export async function mintToken(deployment: NxtpDeployment, to: string, amount: bigint): Promise<void> {
  await sendTx(deployment.contracts.token, "mint", [getAddress(to), amount]);
}
