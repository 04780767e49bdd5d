/**
 * `npm run report -- --since 7d [--until 1d|<unix>|<ISO date>] [--csv]`: GET /pnl of the admin API
 * (docs/admin-api.md#get-pnl) as tables (totals, per route, per chain, per operation, the unpriced count) or as
 * CSV for a spreadsheet (docs/accounting.md#profit-and-loss). The config file is found as `npm run status`
 * finds it; the admin token comes from ROUTER_ADMIN_TOKEN or the config and is never printed; ADMIN_URL
 * overrides the admin API's address. Exits 1 on bad arguments or any answer other than 200.
 */
import type { PnlReport } from "../shared/ledger/pnl-reads";
import { errorMessage } from "../shared/errors";
import { adminUrlOf, getAdminJson } from "./admin-client";
import { loadCliConfig } from "./cli-config";
import { formatPnlCsv, formatPnlTable, parseReportTime } from "./report-format";

export const REPORT_USAGE = "usage: npm run report -- --since 7d [--until 1d|<unix seconds>|<ISO date>] [--csv]";

export interface ReportDeps {
  readonly baseUrl: string;
  readonly adminToken: string;
  readonly out: (text: string) => void;
  readonly nowSec?: number;
}

/** Bad arguments or a refusal of the API: exit code 1, the message on stderr. */
export class ReportCliError extends Error {}

export async function runReport(args: readonly string[], deps: ReportDeps): Promise<PnlReport> {
  const nowSec = Math.floor(deps.nowSec ?? Date.now() / 1000);
  let since: string | undefined;
  let until: string | undefined;
  let csv = false;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i];
    if (arg === "--csv") csv = true;
    else if ((arg === "--since" || arg === "--until") && args[i + 1] !== undefined) {
      if (arg === "--since") since = args[i + 1];
      else until = args[i + 1];
      i += 1;
    } else throw new ReportCliError(`unexpected argument ${JSON.stringify(arg)}\n${REPORT_USAGE}`);
  }
  if (since === undefined) throw new ReportCliError(`--since is required\n${REPORT_USAGE}`);
  let from: number;
  let to: number;
  try {
    from = parseReportTime(since, "--since", nowSec);
    to = until === undefined ? nowSec : parseReportTime(until, "--until", nowSec);
  } catch (err) {
    throw new ReportCliError(`${errorMessage(err)}\n${REPORT_USAGE}`);
  }
  const path = `/pnl?from=${from}&to=${to}`;
  let answer: { status: number; body: unknown };
  try {
    answer = await getAdminJson(deps.baseUrl, deps.adminToken, path, 30_000);
  } catch (err) {
    throw new ReportCliError(
      `GET ${deps.baseUrl}${path}: ${errorMessage(err)} (is the admin process running? ADMIN_URL overrides its address)`,
    );
  }
  const body = answer.body as Record<string, unknown>;
  if (answer.status !== 200) {
    throw new ReportCliError(
      `GET /pnl answered ${answer.status} ${String(body.error ?? "")}: ${String(body.message ?? "")}`.trimEnd(),
    );
  }
  const report = body as unknown as PnlReport;
  deps.out(csv ? formatPnlCsv(report) : formatPnlTable(report));
  return report;
}

async function main(): Promise<number> {
  const config = loadCliConfig("report");
  if (config === undefined) return 1;
  try {
    await runReport(process.argv.slice(2), {
      baseUrl: adminUrlOf(config, process.env),
      adminToken: config.adminToken,
      out: (text) => process.stdout.write(text),
    });
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof ReportCliError ? err.message : `report: ${errorMessage(err)}`}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
