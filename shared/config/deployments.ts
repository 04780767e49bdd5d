import { getAddress } from "ethers";

/** Contract addresses that `@connext/nxtp-contracts` ships for one chain (first deployment name wins). */
export interface KnownDeployment {
  readonly transactionManagerAddress?: string;
  readonly priceOracleAddress?: string;
  readonly multicallAddress?: string;
  readonly routerFactoryAddress?: string;
}

type DeploymentsJson = Record<string, Record<string, { contracts?: Record<string, { address?: string }> }>>;

let cache: ReadonlyMap<number, KnownDeployment> | undefined;

/** Loaded by path: the package's main entry points at a file the tarball does not ship. */
export function knownDeployments(): ReadonlyMap<number, KnownDeployment> {
  if (cache) {
    return cache;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const json = require("@connext/nxtp-contracts/deployments.json") as DeploymentsJson;
  const map = new Map<number, KnownDeployment>();
  for (const [chainId, byName] of Object.entries(json)) {
    const first = Object.values(byName)[0];
    const contracts = first?.contracts ?? {};
    const address = (name: string): string | undefined => {
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
