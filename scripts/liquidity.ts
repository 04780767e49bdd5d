/**
 * `npm run liquidity -- <command>`: the router's liquidity through its admin API (docs/admin-api.md), for the
 * config file's router (ROUTER_CONFIG_FILE, or config.json; the admin token from ROUTER_ADMIN_TOKEN or the
 * config, never printed; ADMIN_URL overrides http://<host>:<port> of the config):
 *   add --chain ID --asset ADDRESS --amount BASE_UNITS [--router ADDRESS]     POST /add-liquidity-for
 *   remove --chain ID --asset ADDRESS --amount BASE_UNITS --recipient ADDRESS  POST /remove-liquidity
 *   migrate --chain ID --new-router ADDRESS [--assets ADDRESS,ADDRESS]       POST /migrate-liquidity
 * One request id per command, sent as X-Request-Id: an answer that may come later (a 504 broadcast_timeout, a 503,
 * no connection) is asked again under the same id, which the API answers with the same transaction, never a
 * second one. Prints the API's JSON answer; exits 1 on a refusal.
 */
import { randomUUID } from "node:crypto";
import { readConfig } from "../shared/config";
import { errorMessage } from "../shared/errors";

export interface LiquidityCliDeps {
  readonly baseUrl: string;
  readonly adminToken: string;
  readonly out: (line: string) => void;
  /** Between two tries of the same request; 3 s by default. */
  readonly retryDelayMs?: number;
  /** Tries of one request while its answer is "not yet"; 10 by default. */
  readonly maxTries?: number;
  readonly requestId?: string;
}

/** Bad arguments, or the API refused: exit code 1. */
export class LiquidityCliError extends Error {}

const USAGE = [
  "usage: npm run liquidity -- add --chain ID --asset ADDRESS --amount BASE_UNITS [--router ADDRESS]",
  "       npm run liquidity -- remove --chain ID --asset ADDRESS --amount BASE_UNITS --recipient ADDRESS",
  "       npm run liquidity -- migrate --chain ID --new-router ADDRESS [--assets ADDRESS,ADDRESS]",
].join("\n");

/** Answers worth asking again under the same request id: the request may still complete. */
const RETRY_STATUSES = new Set([503, 504]);

export async function runLiquidityCommand(args: readonly string[], deps: LiquidityCliDeps): Promise<unknown> {
  const [command, ...rest] = args;
  const flags = parseFlags(rest);
  const route = routeOf(command, flags);
  return send(route.path, route.body, deps);
}

function routeOf(command: string | undefined, flags: Map<string, string>): { path: string; body: object } {
  const chainId = (): string => required(flags, "chain");
  switch (command) {
    case "add":
      allowOnly(flags, ["chain", "asset", "amount", "router"]);
      return {
        path: "/add-liquidity-for",
        body: {
          chainId: chainId(),
          assetId: required(flags, "asset"),
          amount: required(flags, "amount"),
          ...(flags.has("router") ? { routerAddress: flags.get("router") } : {}),
        },
      };
    case "remove":
      allowOnly(flags, ["chain", "asset", "amount", "recipient"]);
      return {
        path: "/remove-liquidity",
        body: {
          chainId: chainId(),
          assetId: required(flags, "asset"),
          amount: required(flags, "amount"),
          recipientAddress: required(flags, "recipient"),
        },
      };
    case "migrate":
      allowOnly(flags, ["chain", "new-router", "assets"]);
      return {
        path: "/migrate-liquidity",
        body: {
          chainId: chainId(),
          newRouterAddress: required(flags, "new-router"),
          ...(flags.has("assets") ? { assets: (flags.get("assets") ?? "").split(",").filter((a) => a !== "") } : {}),
        },
      };
    default:
      throw new LiquidityCliError(USAGE);
  }
}

async function send(path: string, body: object, deps: LiquidityCliDeps): Promise<unknown> {
  const requestId = deps.requestId ?? randomUUID();
  const maxTries = deps.maxTries ?? 10;
  for (let attempt = 1; ; attempt += 1) {
    let status: number;
    let answer: unknown;
    try {
      const res = await fetch(`${deps.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": requestId },
        body: JSON.stringify({ ...body, adminToken: deps.adminToken }),
      });
      status = res.status;
      answer = await res.json().catch(() => ({ error: "not_json", message: `HTTP ${res.status}` }));
    } catch (err) {
      // No connection: the request may or may not have reached the API; the same id makes asking again safe.
      status = 0;
      answer = { error: "unreachable", message: errorMessage(err) };
    }
    const again = (status === 0 || RETRY_STATUSES.has(status)) && attempt < maxTries;
    if (!again) {
      deps.out(JSON.stringify({ requestId, status, response: answer }, null, 2));
      if (status !== 200) {
        throw new LiquidityCliError(`${path} answered ${status === 0 ? "nothing" : status}`);
      }
      return answer;
    }
    deps.out(`${path}: ${status === 0 ? "no answer" : `HTTP ${status}`}; asking again as request ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, deps.retryDelayMs ?? 3_000));
  }
}

function parseFlags(args: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i];
    const value = args[i + 1];
    if (!name.startsWith("--") || value === undefined || value.startsWith("--")) {
      throw new LiquidityCliError(`expected --name value pairs, got ${JSON.stringify(name)}\n${USAGE}`);
    }
    flags.set(name.slice(2), value);
  }
  return flags;
}

function required(flags: Map<string, string>, name: string): string {
  const value = flags.get(name);
  if (value === undefined) {
    throw new LiquidityCliError(`--${name} is required\n${USAGE}`);
  }
  return value;
}

function allowOnly(flags: Map<string, string>, names: readonly string[]): void {
  const unknown = [...flags.keys()].filter((name) => !names.includes(name));
  if (unknown.length > 0) {
    throw new LiquidityCliError(`unknown option ${unknown.map((n) => `--${n}`).join(", ")}\n${USAGE}`);
  }
}

async function main(): Promise<number> {
  let baseUrl: string;
  let adminToken: string;
  try {
    const { config } = readConfig(process.env);
    const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
    baseUrl = process.env.ADMIN_URL ?? `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
    adminToken = config.adminToken;
  } catch (err) {
    process.stderr.write(`liquidity: the router config could not be loaded: ${errorMessage(err)}\n`);
    return 1;
  }
  try {
    await runLiquidityCommand(process.argv.slice(2), {
      baseUrl,
      adminToken,
      out: (line) => process.stdout.write(`${line}\n`),
    });
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof LiquidityCliError ? err.message : `liquidity: ${errorMessage(err)}`}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
