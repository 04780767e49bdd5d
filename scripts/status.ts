/**
 * `npm run status`: GET /status of the admin API as tables (scripts/status-format.ts): per chain head, lag, gas
 * against minGas, open transfers and queues; liquidity per pool asset by name in whole units; processes alive
 * and ready; whether the router is drained. `npm run status -- --json` prints the body as it came.
 * The config file is found as `npm run queues` finds it (scripts/cli-config.ts); ADMIN_URL overrides the admin
 * API's address. Token decimals are read from each chain's first provider (3 s each; unknown ones are shown in
 * base units).
 */
import { JsonRpcProvider } from "ethers";
import type { RouterConfig } from "../shared/config/types";
import { createDecimalsReader } from "../shared/chain/router-balances";
import { errorMessage } from "../shared/errors";
import { withTimeout } from "../shared/timing";
import { adminUrlOf, fetchStatus } from "./admin-client";
import { loadCliConfig } from "./cli-config";
import { assetKey, formatStatus, type AssetNames, type StatusView } from "./status-format";

const DECIMALS_TIMEOUT_MS = 3_000;

/** Each pool asset's name (its first swap pool's) and, where the chain answers, its decimals. */
async function assetNames(config: RouterConfig): Promise<AssetNames> {
  const names = new Map<string, { name: string; decimals?: number }>();
  const providers = new Map<number, JsonRpcProvider>();
  try {
    await Promise.all(
      config.swapPools.flatMap((pool) =>
        pool.assets.map(async ({ chainId, assetId }) => {
          const key = assetKey(chainId, assetId);
          if (names.has(key)) return;
          names.set(key, { name: pool.name ?? assetId });
          const url = config.chainConfig[String(chainId)]?.providers[0];
          if (url === undefined) return;
          const provider = providers.get(chainId) ?? new JsonRpcProvider(url, chainId, { staticNetwork: true });
          providers.set(chainId, provider);
          try {
            const decimals = await withTimeout(createDecimalsReader(provider)(assetId), DECIMALS_TIMEOUT_MS);
            names.set(key, { name: pool.name ?? assetId, decimals });
          } catch {
            // shown in base units
          }
        }),
      ),
    );
  } finally {
    for (const provider of providers.values()) provider.destroy();
  }
  return names;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.some((a) => a !== "--json")) {
    process.stderr.write("usage: npm run status [-- --json]\n");
    return 1;
  }
  const config = loadCliConfig("status");
  if (config === undefined) return 1;
  let status: unknown;
  try {
    status = await fetchStatus(adminUrlOf(config, process.env), config.adminToken);
  } catch (err) {
    process.stderr.write(
      `status: ${errorMessage(err)} (is the admin process running? ADMIN_URL overrides its address)\n`,
    );
    return 1;
  }
  if (args[0] === "--json") {
    process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(formatStatus(status as StatusView, await assetNames(config)));
  return 0;
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
