/**
 * Router-owned Redis keys (outside BullMQ's own), all under the deployment prefix. Defined once here so an
 * SRE can find every key the router writes, and processes agree on them without importing each other.
 */
export function routerKey(prefix: string, ...parts: ReadonlyArray<string | number>): string {
  return [prefix, "router", ...parts].join(":");
}

/** Liveness of a process instance, refreshed by the process itself; expires when it dies. */
export function heartbeatKey(prefix: string, service: string, instance: string): string {
  return routerKey(prefix, "heartbeat", service, instance);
}
