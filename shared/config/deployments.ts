import { getAddress } from "ethers";
import deploymentsJson from "../chain/artifacts/deployments.json";

/** Contract addresses that `@connext/nxtp-contracts` ships for one chain (first deployment name wins). */
export interface KnownDeployment {
  readonly transactionManagerAddress?: string;
  readonly priceOracleAddress?: string;
  readonly multicallAddress?: string;
  readonly routerFactoryAddress?: string;
}

/** The contracts whose addresses the vendored deployments.json keeps (scripts/vendor-nxtp-artifacts.ts). */
export const DEPLOYMENT_CONTRACT_NAMES = [
  "TransactionManager",
  "ConnextPriceOracle",
  "Multicall",
  "RouterFactory",
] as const;

/** chainId → deployment name → contracts; the package's hardhat-deploy export trimmed to addresses. */
export type DeploymentsJson = Record<string, Record<string, { contracts?: Record<string, { address?: string }> }>>;

let cache: ReadonlyMap<number, KnownDeployment> | undefined;

/** Read from the vendored copy (shared/chain/artifacts/deployments.json), not from the dev-only package. */
export function knownDeployments(): ReadonlyMap<number, KnownDeployment> {
  if (cache) {
    return cache;
  }
  const json: DeploymentsJson = deploymentsJson;
  const map = new Map<number, KnownDeployment>();
  for (const [chainId, byName] of Object.entries(json)) {
    const first = Object.values(byName)[0];
    const contracts = first?.contracts ?? {};
    const address = (name: (typeof DEPLOYMENT_CONTRACT_NAMES)[number]): string | undefined => {
      const raw = contracts[name]?.address;
      return raw ? getAddress(raw) : undefined;
    };
    map.set(Number(chainId), {
      transactionManagerAddress: address("TransactionManager"),
      priceOracleAddress: address("ConnextPriceOracle"),
      multicallAddress: address("Multicall"),
      routerFactoryAddress: address("RouterFactory"),
    });
  }
  cache = map;
  return map;
}
