import type { JsonFragment } from "ethers";
import connextPriceOracle from "./artifacts/ConnextPriceOracle.json";
import erc20 from "./artifacts/ERC20.json";
import router from "./artifacts/Router.json";
import transactionManager from "./artifacts/TransactionManager.json";

/**
 * ABIs of the NXTP v0 contracts the router calls, vendored from `@connext/nxtp-contracts` 0.1.42 into
 * ./artifacts by `npm run vendor:artifacts` (test/unit/vendored-artifacts.test.ts keeps them equal to the
 * package). The package itself is a dev dependency: it drags hardhat tooling into every install, and the
 * router needs no bytecode at run time. Tests that deploy read bytecode through scripts/nxtp-package.ts.
 */
export const VENDORED_ABI_NAMES = ["TransactionManager", "Router", "ConnextPriceOracle", "ERC20"] as const;

export type NxtpAbiName = (typeof VENDORED_ABI_NAMES)[number];

/** Static imports so tsc copies the JSON next to the compiled file and dist/ runs on its own. */
const VENDORED: Readonly<Record<NxtpAbiName, unknown>> = {
  TransactionManager: transactionManager,
  Router: router,
  ConnextPriceOracle: connextPriceOracle,
  ERC20: erc20,
};

const cache = new Map<NxtpAbiName, readonly JsonFragment[]>();

/** Directly usable as an ethers `InterfaceAbi`. */
export function loadAbi(name: NxtpAbiName): readonly JsonFragment[] {
  let abi = cache.get(name);
  if (!abi) {
    abi = toAbi(VENDORED[name], name);
    cache.set(name, abi);
  }
  return abi;
}

function toAbi(raw: unknown, name: string): readonly JsonFragment[] {
  const abi = typeof raw === "object" && raw !== null ? (raw as { abi?: unknown }).abi : undefined;
  if (!Array.isArray(abi)) {
    throw new Error(`vendored artifact ${name} lacks an abi array (run npm run vendor:artifacts)`);
  }
  return Object.freeze(abi as JsonFragment[]);
}
