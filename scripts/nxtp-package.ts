import type { JsonFragment } from "ethers";

/**
 * Reads `@connext/nxtp-contracts` itself: a dev dependency, so only build-time and test-time code may call
 * this (the vendoring script, the test harness that deploys bytecode, the bench). The router at run time
 * reads the vendored copies in shared/chain/artifacts instead. The package's `main` entry (dist/index.js)
 * is not in the tarball, so every JSON file is required by its path, and only when a function asks for it.
 */
export const NXTP_CONTRACTS_PACKAGE = "@connext/nxtp-contracts";

export type NxtpContractName =
  | "TransactionManager"
  | "Router"
  | "RouterFactory"
  | "ConnextPriceOracle"
  | "Multicall"
  | "TestERC20"
  | "FeeERC20"
  | "ERC20";

/** Paths under the package's `artifacts/` folder (Hardhat layout: <source>/<contract>.json). */
const ARTIFACT_PATHS: Readonly<Record<NxtpContractName, string>> = {
  TransactionManager: "contracts/TransactionManager.sol/TransactionManager.json",
  Router: "contracts/Router.sol/Router.json",
  RouterFactory: "contracts/RouterFactory.sol/RouterFactory.json",
  ConnextPriceOracle: "contracts/ConnextPriceOracle.sol/ConnextPriceOracle.json",
  Multicall: "contracts/Multicall.sol/Multicall.json",
  TestERC20: "contracts/test/TestERC20.sol/TestERC20.json",
  FeeERC20: "contracts/test/FeeERC20.sol/FeeERC20.json",
  // OpenZeppelin's concrete ERC20 (constructor(name, symbol)); its ABI is the standard token interface.
  ERC20: "@openzeppelin/contracts/token/ERC20/ERC20.sol/ERC20.json",
};

export interface PackageArtifact {
  readonly contractName: string;
  readonly sourceName: string;
  /** Directly usable as an ethers `InterfaceAbi`. */
  readonly abi: readonly JsonFragment[];
  /** 0x-prefixed creation bytecode ("0x" for interfaces). */
  readonly bytecode: string;
}

const cache = new Map<NxtpContractName, PackageArtifact>();

export function packageArtifact(name: NxtpContractName): PackageArtifact {
  const cached = cache.get(name);
  if (cached) {
    return cached;
  }
  const path = `${NXTP_CONTRACTS_PACKAGE}/artifacts/${ARTIFACT_PATHS[name]}`;
  const artifact = toArtifact(requirePackageFile(path), path);
  cache.set(name, artifact);
  return artifact;
}

/** The package's whole `deployments.json` (hardhat-deploy export: chainId → network name → contracts). */
export function packageDeployments(): unknown {
  return requirePackageFile(`${NXTP_CONTRACTS_PACKAGE}/deployments.json`);
}

export function packageVersion(): string {
  const { version } = requirePackageFile(`${NXTP_CONTRACTS_PACKAGE}/package.json`) as { version?: unknown };
  if (typeof version !== "string") {
    throw new Error(`${NXTP_CONTRACTS_PACKAGE}/package.json has no version`);
  }
  return version;
}

function requirePackageFile(path: string): unknown {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- JSON by path is the only working entry
    return require(path) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND") {
      throw new Error(`${path} not found: ${NXTP_CONTRACTS_PACKAGE} is a dev dependency (npm ci without --omit=dev)`, {
        cause: err,
      });
    }
    throw err;
  }
}

function toArtifact(raw: unknown, path: string): PackageArtifact {
  if (typeof raw !== "object" || raw === null) {
    throw new Error(`artifact ${path} is not a JSON object`);
  }
  const { contractName, sourceName, abi, bytecode } = raw as Record<string, unknown>;
  if (typeof contractName !== "string" || typeof sourceName !== "string") {
    throw new Error(`artifact ${path} lacks contractName or sourceName`);
  }
  if (!Array.isArray(abi) || typeof bytecode !== "string" || !bytecode.startsWith("0x")) {
    throw new Error(`artifact ${path} lacks an abi array or a 0x bytecode string`);
  }
  return Object.freeze({ contractName, sourceName, abi: abi as JsonFragment[], bytecode });
}
