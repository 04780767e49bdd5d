import type { RouterConfig } from "../shared/config/types";

/** The admin API's base URL: ADMIN_URL, else the config's host and port (a wildcard host is reached on loopback). */
export function adminUrlOf(config: Pick<RouterConfig, "host" | "port">, env: NodeJS.ProcessEnv): string {
  if (env.ADMIN_URL) return env.ADMIN_URL.replace(/\/+$/, "");
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
}

/** GET <path> of the admin API: its status and parsed JSON body ({} when not JSON). Only a failed request throws. */
export async function getAdminJson(
  adminUrl: string,
  adminToken: string,
  path: string,
  timeoutMs = 10_000,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${adminUrl}${path}`, {
    headers: { authorization: `Bearer ${adminToken}` },
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: response.status, body: await response.json().catch(() => ({})) };
}

/** GET /status of the admin API (docs/operating.md), as parsed JSON; a non-2xx answer throws naming its status. */
export async function fetchStatus(adminUrl: string, adminToken: string): Promise<unknown> {
  const { status, body } = await getAdminJson(adminUrl, adminToken, "/status");
  if (status < 200 || status > 299) {
    throw new Error(`GET ${adminUrl}/status answered ${status}`);
  }
  return body;
}
