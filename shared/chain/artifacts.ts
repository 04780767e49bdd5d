import type { JsonFragment } from "ethers";

/**
 * ABI + creation bytecode of the NXTP v0 contracts, read from the Hardhat artifacts that
 * `@connext/nxtp-contracts` ships. The package's `main` entry (dist/index.js) does not exist, so each JSON
 * file is required by its path.
 */
export type NxtpArtifactName =
  | "TransactionManager"
  | "Router"
  | "RouterFactory"
  | "ConnextPriceOracle"
  | "Multicall"
  | "TestERC20"
  | "FeeERC20"
  | "ERC20";

export interface ContractArtifact {
  /** Directly usable as an ethers `InterfaceAbi`. */
  readonly abi: readonly JsonFragment[];
  /** 0x-prefixed creation bytecode ("0x" for interfaces). */
  readonly bytecode: string;
}

const ARTIFACTS_ROOT = "@connext/nxtp-contracts/artifacts";

const ARTIFACT_PATHS: Readonly<Record<NxtpArtifactName, string>> = {
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

const cache = new Map<NxtpArtifactName, ContractArtifact>();

export function loadArtifact(name: NxtpArtifactName): ContractArtifact {
  const cached = cache.get(name);
  if (cached) {
    return cached;
  }
  const path = `${ARTIFACTS_ROOT}/${ARTIFACT_PATHS[name]}`;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- JSON by path is the only working entry
  const raw: unknown = require(path);
  const artifact = toArtifact(raw, path);
  cache.set(name, artifact);
  return artifact;
}

function toArtifact(raw: unknown, path: string): ContractArtifact {
  if (typeof raw !== "object" || raw === null) {
    throw new Error(`artifact ${path} is not a JSON object`);
  }
  const { abi, bytecode } = raw as { abi?: unknown; bytecode?: unknown };
  if (!Array.isArray(abi) || typeof bytecode !== "string" || !bytecode.startsWith("0x")) {
    throw new Error(`artifact ${path} lacks an abi array or a 0x bytecode string`);
  }
  return Object.freeze({ abi: abi as JsonFragment[], bytecode });
}
