import { contractInterface } from "./contracts";
import type { ChainProvider } from "./chain-provider";

/**
 * `ConnextPriceOracle.getTokenPrice(address)` at `oracle` (docs/protocol.md#price-sources): USD × 1e18 per whole token, 0 when
 * the oracle knows no price. The one oracle read: the auction's refreshers and the submitter's relay check share it.
 */
export async function readOraclePrice(
  provider: Pick<ChainProvider, "call">,
  oracle: string,
  address: string,
): Promise<bigint> {
  const iface = contractInterface("ConnextPriceOracle");
  const data = await provider.call({ to: oracle, data: iface.encodeFunctionData("getTokenPrice", [address]) });
  const [price] = iface.decodeFunctionResult("getTokenPrice", data);
  return price as bigint;
}
