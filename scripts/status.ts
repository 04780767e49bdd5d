/**
 * `npm run status`: GET /status of the admin API as tables (scripts/status-format.ts): per chain head, lag, gas
 * against minGas, open transfers and queues; liquidity per pool asset by name in whole units; processes alive
 * and ready; whether the router is drained; the books (GET /pnl over all time: fees, relayer fees, gas and net per
 * chain and asset, exact base units) and each chain's latest reconciliation, or a line saying the books are off or
 * unreadable (the rest still prints, exit 0). `npm run status -- --json` prints the /status body as it came.
 * The config file is found as `npm run queues` finds it (scripts/cli-config.ts); ADMIN_URL overrides the admin
 * API's address. Token decimals are read from each chain's first provider (3 s each; unknown ones are shown in
 * base units).
 */
import { JsonRpcProvider } from "ethers";
import type { RouterConfig } from "../shared/config/types";
import { createDecimalsReader } from "../shared/chain/router-balances";
import { errorMessage } from "../shared/errors";
import { withTimeout } from "../shared/timing";
import type { PnlReport } from "../shared/ledger/pnl-reads";
import { adminUrlOf, fetchStatus, getAdminJson } from "./admin-client";
import { loadCliConfig } from "./cli-config";
import { assetKey, formatStatus, type AssetNames, type LedgerView, type StatusView } from "./status-format";

const DECIMALS_TIMEOUT_MS = 3_000;
/** The admin gives the database 5 s to connect; the all-time sum is one statement over the books. */
const PNL_TIMEOUT_MS = 30_000;

/** GET /pnl without a period (all time): the books' figures per chain and asset, or why there are none. */
async function readLedger(adminUrl: string, adminToken: string): Promise<LedgerView> {
  try {
    const { status, body } = await getAdminJson(adminUrl, adminToken, "/pnl", PNL_TIMEOUT_MS);
    const report = body as Partial<PnlReport> & { error?: unknown; message?: unknown };
    if (status === 200 && Array.isArray(report.assets) && typeof report.to === "number") {
      return { state: "on", toSec: report.to, assets: report.assets };
    }
    if (report.error === "ledger_off") return { state: "off" };
    const said = [report.error, report.message].filter((v) => typeof v === "string").join(": ");
    return { state: "unavailable", reason: `GET /pnl answered ${status}${said === "" ? "" : ` ${said}`}` };
  } catch (err) {
    return { state: "unavailable", reason: `GET /pnl: ${errorMessage(err)}` };
  }
}

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
  const adminUrl = adminUrlOf(config, process.env);
  let status: unknown;
  try {
    status = await fetchStatus(adminUrl, config.adminToken);
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
  const [names, ledger] = await Promise.all([assetNames(config), readLedger(adminUrl, config.adminToken)]);
  process.stdout.write(formatStatus(status as StatusView, names, ledger));
  return 0;
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
