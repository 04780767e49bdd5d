import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { spawnManaged, waitForReady, type ManagedProcess } from "../harness/child-process";

/**
 * Network namespaces of the multi-host test bed. Every host is a namespace `<prefix><host>`; a switch namespace
 * `<prefix>sw` holds the bridge, with one veth per host. The only addresses anywhere are those of the bed's
 * own hosts (SUBNET.x on the bridge); the machine's own namespace gets no interface, route or address: the test
 * reaches the bed only through a unix socket (forward.js runs in the `t` host). Deleting the namespaces removes
 * the bridge and every veth with them; processes are killed first (a namespace outlives its deletion while a
 * process still runs in it).
 */
export const NETNS_PREFIX = "nxmh";
/** A /24 of the bed's own; nothing outside the namespaces routes it. */
export const SUBNET = "10.213.47";
/** The switch namespace's name after the bed's prefix (it holds the bridge, and the delay line when one runs). */
const SWITCH = "sw";

/** The bed's namespace prefix for this jest worker: `nxmh<pid>-` (the pid tells a stale bed from a live one). */
export function bedPrefix(pid = process.pid): string {
  return `${NETNS_PREFIX}${pid}-`;
}

function ip(args: readonly string[]): string {
  return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 10_000 });
}

/** Runs `command` inside namespace `ns` (ip netns exec), synchronously; throws with its stderr on failure. */
export function nsExec(ns: string, command: readonly string[]): string {
  return ip(["netns", "exec", ns, ...command]);
}

/** null when this process may create namespaces; otherwise the reason (one line), for the skip message. */
export function netnsUnavailable(): string | null {
  const probe = `${bedPrefix()}probe`;
  try {
    ip(["netns", "add", probe]);
    ip(["netns", "del", probe]);
    return null;
  } catch (err) {
    const text = err instanceof Error ? ((err as { stderr?: string }).stderr ?? err.message) : String(err);
    return `\`ip netns add\` failed (needs root and iproute2): ${text.trim().split("\n")[0]}`;
  }
}

function listNamespaces(): string[] {
  return ip(["netns", "list"])
    .split("\n")
    .map((l) => l.trim().split(" ")[0])
    .filter((n) => n.length > 0);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILLs every process inside `ns`, then deletes it; never throws. */
export function deleteNamespace(ns: string): void {
  try {
    for (const pid of ip(["netns", "pids", ns]).split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // already gone
      }
    }
  } catch {
    // no such namespace
  }
  try {
    ip(["netns", "del", ns]);
  } catch {
    // already deleted
  }
}

/**
 * Deletes the bed namespaces of `pid` (default: every bed whose creating process is gone, i.e. stale beds left
 * by a killed run). Only names with the bed's own prefix are touched. Returns the names deleted.
 */
export function cleanupBeds(opts: { pid?: number } = {}): string[] {
  const deleted: string[] = [];
  for (const ns of listNamespaces()) {
    const m = new RegExp(`^${NETNS_PREFIX}(\\d+)-`).exec(ns);
    if (!m) continue;
    const owner = Number(m[1]);
    if (opts.pid !== undefined ? owner !== opts.pid : pidAlive(owner) && owner !== process.pid) continue;
    deleteNamespace(ns);
    deleted.push(ns);
  }
  return deleted;
}

export interface Host {
  /** Short name (a, b, …); the namespace is `ns`. */
  readonly name: string;
  readonly ns: string;
  /** SUBNET.<octet> */
  readonly addr: string;
  /** The host's interface on the bridge (inside its namespace). */
  readonly dev: string;
}

/**
 * Creates the switch namespace with bridge br0 and one namespace per host, each with `eth0` (its address on
 * the bed's /24) and loopback up. Nothing is routed beyond the /24: no default route.
 */
export function createBed(prefix: string, hosts: ReadonlyArray<{ name: string; octet: number }>): Map<string, Host> {
  const sw = `${prefix}${SWITCH}`;
  ip(["netns", "add", sw]);
  ip(["-n", sw, "link", "add", "br0", "type", "bridge"]);
  ip(["-n", sw, "link", "set", "br0", "up"]);
  ip(["-n", sw, "link", "set", "lo", "up"]);
  const out = new Map<string, Host>();
  for (const h of hosts) {
    const ns = `${prefix}${h.name}`;
    ip(["netns", "add", ns]);
    ip(["-n", sw, "link", "add", `p-${h.name}`, "type", "veth", "peer", "name", "eth0", "netns", ns]);
    ip(["-n", sw, "link", "set", `p-${h.name}`, "master", "br0", "up"]);
    ip(["-n", ns, "addr", "add", `${SUBNET}.${h.octet}/24`, "dev", "eth0"]);
    ip(["-n", ns, "link", "set", "eth0", "up"]);
    ip(["-n", ns, "link", "set", "lo", "up"]);
    out.set(h.name, { name: h.name, ns, addr: `${SUBNET}.${h.octet}`, dev: "eth0" });
  }
  return out;
}

/** The switch namespace of the bed that `h` is a host of. */
function switchOf(h: Host): string {
  return `${h.ns.slice(0, h.ns.length - h.name.length)}${SWITCH}`;
}

/** Every namespace of the bed `prefix` (hosts and switch), processes killed first. */
export function destroyBed(prefix: string): void {
  for (const ns of listNamespaces().filter((n) => n.startsWith(prefix))) deleteNamespace(ns);
}

// ---- faults, only ever inside the bed's namespaces --------------------------------------------------------

/** `tc netem` delay and loss on the host's bridge interface (egress; apply on both ends for a round trip). */
export function netem(h: Host, delayMs: number, lossPercent: number): void {
  nsExec(h.ns, [
    "tc",
    "qdisc",
    "replace",
    "dev",
    h.dev,
    "root",
    "netem",
    "delay",
    `${delayMs}ms`,
    "loss",
    `${lossPercent}%`,
  ]);
}

export function clearNetem(h: Host): void {
  try {
    nsExec(h.ns, ["tc", "qdisc", "del", "dev", h.dev, "root"]);
  } catch {
    // none set
  }
}

/**
 * Cuts `h` off from `targets` only: a blackhole route per target in h's namespace, more specific than the
 * bridge's /24, so h's packets to them are dropped without an error while its other peers stay reachable (the
 * targets' replies never get an answer either). Works on kernels without the tc classifiers (no sch_prio/u32).
 */
export function partition(h: Host, targets: readonly Host[]): void {
  for (const t of targets) ip(["-n", h.ns, "route", "add", "blackhole", `${t.addr}/32`]);
}

export function heal(h: Host, targets: readonly Host[]): void {
  for (const t of targets) {
    try {
      ip(["-n", h.ns, "route", "del", "blackhole", `${t.addr}/32`]);
    } catch {
      // not partitioned
    }
  }
}

/** null when `tc netem` works in a namespace of ours (the kernel has sch_netem); otherwise why not. */
export function netemUnavailable(): string | null {
  const probe = `${bedPrefix()}netem`;
  try {
    ip(["netns", "add", probe]);
    ip(["-n", probe, "link", "set", "lo", "up"]);
    nsExec(probe, ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]);
    return null;
  } catch (err) {
    const text = err instanceof Error ? ((err as { stderr?: string }).stderr ?? err.message) : String(err);
    return `tc netem unavailable (kernel without sch_netem?): ${text.trim().split("\n")[0]}`;
  } finally {
    deleteNamespace(probe);
  }
}

/** null when the user-space delay line can run here (/dev/net/tun and python3); otherwise why not. */
export function delayLineUnavailable(): string | null {
  if (!existsSync("/dev/net/tun")) return "no /dev/net/tun for the delay line";
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore", timeout: 10_000 });
    return null;
  } catch {
    return "no python3 for the delay line (test/multihost/delayline.py)";
  }
}

/** null when addLatency can work (tc netem, or else the delay line); otherwise why neither can. */
export function latencyUnavailable(): string | null {
  const netemMissing = netemUnavailable();
  const delayLineMissing = netemMissing ? delayLineUnavailable() : null;
  return delayLineMissing ? `${netemMissing}; ${delayLineMissing}` : null;
}

export interface Latency {
  /** How it is applied: `tc netem` on each host's egress, or the user-space delay line. */
  readonly via: "tc netem" | "delay line";
  /** Restores the direct links (idempotent). The delay line reports what it did: "forwarded N dropped N …". */
  clear(): Promise<string>;
}

const DELAY_LINE_PY = resolve(__dirname, "delayline.py");
/** The delay line's TUN device in each host (delayline.py). */
const DELAY_LINE_DEV = "wan0";

/**
 * Every packet that one of `hosts` sends to another bed host (of `hosts` or `receivers`) is delayed by
 * `delayMs` and dropped with probability `lossPercent`: `tc netem` on each of `hosts`' bridge interface where
 * the kernel has sch_netem; otherwise the user-space delay line, with the same effect per direction. `receivers`
 * (hosts whose own egress stays direct, such as the test's door) matter only to the delay line, which must be
 * able to hand them their packets. Only ever inside the bed's namespaces.
 */
export async function addLatency(
  hosts: readonly Host[],
  delayMs: number,
  lossPercent: number,
  receivers: readonly Host[] = [],
): Promise<Latency> {
  if (netemUnavailable() === null) {
    for (const h of hosts) netem(h, delayMs, lossPercent);
    return {
      via: "tc netem",
      clear: async () => {
        for (const h of hosts) clearNetem(h);
        return "";
      },
    };
  }
  return startDelayLine(hosts, delayMs, lossPercent, receivers);
}

/**
 * test/multihost/delayline.py, run in the bed's switch namespace (so that tearing the bed down kills it), opens
 * a TUN `wan0` in every host given. Then each of `hosts` gets a /32 route per peer through wan0, more specific
 * than the bridge's /24: its packets to that peer, with the same addresses (open TCP connections carry on), go
 * through the delay line. Clearing deletes the routes, then stops the delay line; its TUNs, and any route left
 * through them, vanish with it.
 */
async function startDelayLine(
  hosts: readonly Host[],
  delayMs: number,
  lossPercent: number,
  receivers: readonly Host[],
): Promise<Latency> {
  const all = [...hosts, ...receivers.filter((r) => !hosts.includes(r))];
  const sw = switchOf(all[0]);
  const proc: ManagedProcess = spawnManaged({
    name: "delay line",
    command: "ip",
    args: [
      "netns",
      "exec",
      sw,
      "python3",
      DELAY_LINE_PY,
      "--delay-ms",
      String(delayMs),
      "--loss-percent",
      String(lossPercent),
      ...all.map((h) => `${h.ns}=${h.addr}`),
    ],
  });
  const routes = hosts.flatMap((h) => all.filter((peer) => peer !== h).map((peer) => ({ h, peer })));
  const unroute = (): void => {
    for (const { h, peer } of routes) {
      try {
        ip(["-n", h.ns, "route", "del", `${peer.addr}/32`, "dev", DELAY_LINE_DEV]);
      } catch {
        // not added, or gone with the device
      }
    }
  };
  try {
    await waitForReady(proc, async () => /^ready$/m.test(proc.outputTail()), 10_000);
    for (const { h, peer } of routes) {
      ip(["-n", h.ns, "route", "add", `${peer.addr}/32`, "dev", DELAY_LINE_DEV, "src", h.addr]);
    }
  } catch (err) {
    unroute();
    await proc.stop();
    throw err;
  }
  return {
    via: "delay line",
    clear: async () => {
      unroute();
      await proc.stop();
      return proc
        .outputTail()
        .replace(/^ready$/m, "")
        .trim();
    },
  };
}

/** SIGKILL `pid` from inside its host, as an operator on that host would (ip netns exec <host> kill -9). */
export function killIn(h: Host, pid: number): void {
  nsExec(h.ns, ["kill", "-9", String(pid)]);
}
