/**
 * The image's HEALTHCHECK: GET /ping on the admin API at the address a published port forwards to, which is the
 * container's own network interface, never its loopback. An admin API bound to 127.0.0.1 inside the container
 * answers on loopback but not there, so a probe of loopback would call healthy a container nothing can reach.
 * The port is HEALTHCHECK_PORT (docker-compose.yml sets it to the container side of its `ports:` entry), else
 * the config's `port`. Exit code 0 healthy, 1 not, with the reason on stdout (`docker inspect` shows it).
 */
import { networkInterfaces } from "node:os";
import { ConfigError, configFilePath, loadConfigFile } from "../shared/config";

const TIMEOUT_MS = 4_000;

/** The first non-internal IPv4 address of this host (a container's eth0), else the first IPv6 one. */
export function externalAddress(interfaces = networkInterfaces()): string | undefined {
  const all = Object.values(interfaces).flatMap((list) => list ?? []);
  const external = all.filter((i) => !i.internal);
  return (external.find((i) => i.family === "IPv4") ?? external.find((i) => i.family === "IPv6"))?.address;
}

export function probeUrl(address: string, port: number): string {
  return `http://${address.includes(":") ? `[${address}]` : address}:${port}/ping`;
}

/** Probes the admin API as the published port reaches it; returns the exit code and prints the reason. */
export async function checkHealth(env: NodeJS.ProcessEnv): Promise<number> {
  let port: number;
  try {
    const { config } = loadConfigFile(configFilePath(env), env);
    port = env.HEALTHCHECK_PORT ? Number(env.HEALTHCHECK_PORT) : config.port;
  } catch (err) {
    process.stdout.write(`unhealthy: ${err instanceof ConfigError ? err.problems.join("; ") : String(err)}\n`);
    return 1;
  }
  const address = externalAddress();
  if (address === undefined) {
    process.stdout.write("unhealthy: no network interface besides loopback\n");
    return 1;
  }
  const url = probeUrl(address, port);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    const body = await res.text();
    if (res.ok && body === "pong") {
      process.stdout.write(`healthy: ${url}\n`);
      return 0;
    }
    process.stdout.write(`unhealthy: ${url} answered ${res.status}\n`);
  } catch (err) {
    process.stdout.write(
      `unhealthy: ${url} does not answer (${err instanceof Error ? err.message : String(err)}); the admin API must ` +
        "bind the container's interface (ROUTER_CONTAINER_HOST=0.0.0.0, the image's default) on the published port\n",
    );
  }
  return 1;
}

if (require.main === module) {
  void checkHealth(process.env).then((code) => {
    process.exitCode = code;
  });
}
