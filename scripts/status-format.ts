import { formatUnits, ZeroAddress } from "ethers";
import type { PnlAsset } from "../shared/ledger/pnl-reads";
import type { ReconciliationRow } from "../shared/ledger/reconcile-reads";

/**
 * GET /status (services/admin/status.ts) as tables for a person (`npm run status`): no I/O here, so the output
 * is unit-tested on a captured body. Amounts in whole units of the pool asset, named by its swap pool; times as
 * ages; a row a person must act on marked with `!`.
 */

/** The parts of GET /status shown (the API's field names). */
export interface StatusView {
  readonly atMs: number;
  readonly drained?: boolean;
  readonly modes: {
    readonly network: string;
    readonly cleanUpMode: boolean;
    readonly cleanUpModeSinceMs?: number;
    readonly diagnosticMode: boolean;
  };
  readonly processes: ReadonlyArray<{
    readonly processId: string;
    readonly role: string;
    readonly chainId?: number;
    readonly pid: number;
    readonly ready: boolean;
    readonly alive: boolean;
    readonly ageSec: number;
    readonly lease?: {
      readonly role: string;
      readonly term?: number;
      /** A poller of several chains: each chain's lease. */
      readonly chains?: ReadonlyArray<{ readonly chainId: number; readonly role: string; readonly term?: number }>;
    };
  }>;
  readonly chains: ReadonlyArray<{
    readonly chainId: number;
    readonly head?: number;
    readonly syncLagBlocks?: number;
    readonly headAgeSec?: number;
    readonly gasWei?: string;
    readonly minGasWei: string;
    readonly gasLow?: boolean;
    readonly assets: ReadonlyArray<{
      readonly assetId: string;
      readonly liquidity?: string;
      readonly reserved: string;
      readonly updatedAtMs?: number;
    }>;
    readonly queue: Readonly<Record<string, number>>;
    readonly openTransfers?: number;
    readonly pendingTransactions: readonly unknown[];
  }>;
  /** The latest reconciliation per chain (services/admin/status.ts `LedgerStatus`); absent when the books are off. */
  readonly ledger?:
    | { readonly drift: boolean; readonly reconciliation: readonly ReconciliationRow[] }
    | { readonly unavailable: string };
}

/**
 * The books' figures (GET /pnl over all time, its `assets`), or why there are none: the config has no `ledger`
 * section, or the admin could not read the database (the rest of the status still prints).
 */
export type LedgerView =
  | { readonly state: "on"; readonly toSec: number; readonly assets: readonly PnlAsset[] }
  | { readonly state: "off" }
  | { readonly state: "unavailable"; readonly reason: string };

/** A pool asset's name (its swap pool's) and decimals, keyed by `assetKey`; decimals undefined when unknown. */
export type AssetNames = ReadonlyMap<string, { readonly name: string; readonly decimals?: number }>;

export function assetKey(chainId: number, assetId: string): string {
  return `${chainId}:${assetId.toLowerCase()}`;
}

/** Fraction digits shown of a whole-unit amount (rounded down: never more than there is). */
const SHOWN_DECIMALS = 6;

/** `12345.678901` from base units; base units with `(base units)` when the decimals are unknown. */
export function wholeUnits(amount: string | undefined, decimals: number | undefined): string {
  if (amount === undefined) return "-";
  if (decimals === undefined) return `${amount} (base units)`;
  const [int, frac = ""] = formatUnits(BigInt(amount), decimals).split(".");
  const shown = frac.slice(0, SHOWN_DECIMALS).replace(/0+$/, "");
  return shown === "" ? int : `${int}.${shown}`;
}

/** Left-aligned columns, two spaces apart; numbers right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => /^[-0-9.,]+( s)?$/.test(r[i])));
  const line = (cells: readonly string[], head: boolean): string =>
    cells
      .map((c, i) => (numeric[i] && !head ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(header, true), ...rows.map((r) => line(r, false))];
}

const IN_FLIGHT = ["waiting", "active", "delayed", "prioritized"] as const;

function age(sec: number | undefined): string {
  if (sec === undefined) return "-";
  return sec < 120 ? `${sec.toFixed(1)} s` : sec < 7200 ? `${Math.round(sec / 60)} min` : `${Math.round(sec / 3600)} h`;
}

function onOff(on: boolean): string {
  return on ? "ON" : "off";
}

export function formatStatus(status: StatusView, names: AssetNames, ledger?: LedgerView): string {
  const out: string[] = [];
  const modes = status.modes;
  const cleanUp =
    modes.cleanUpMode && modes.cleanUpModeSinceMs !== undefined
      ? `ON since ${new Date(modes.cleanUpModeSinceMs).toISOString()}`
      : onOff(modes.cleanUpMode);
  out.push(
    `router status at ${new Date(status.atMs).toISOString()} · network ${modes.network} · clean-up ${cleanUp} · ` +
      `diagnostic ${onOff(modes.diagnosticMode)} · drained ${status.drained === undefined ? "?" : status.drained ? "yes" : "no"}`,
  );

  out.push("", "CHAINS");
  out.push(
    ...table(
      ["chain", "head", "lag", "head age", "gas", "minGas", "open", ...IN_FLIGHT, "failed", "pending tx", ""],
      status.chains.map((c) => [
        String(c.chainId),
        c.head === undefined ? "-" : String(c.head),
        c.syncLagBlocks === undefined ? "-" : String(c.syncLagBlocks),
        age(c.headAgeSec),
        wholeUnits(c.gasWei, 18),
        wholeUnits(c.minGasWei, 18),
        c.openTransfers === undefined ? "-" : String(c.openTransfers),
        ...IN_FLIGHT.map((s) => String(c.queue[s] ?? 0)),
        String(c.queue.failed ?? 0),
        String(c.pendingTransactions.length),
        [
          c.gasLow ? "! gas below minGas" : "",
          c.head === undefined && c.assets.length > 0 ? "! no head stored (poller down?)" : "",
        ]
          .filter((m) => m !== "")
          .join(", "),
      ]),
    ),
  );

  out.push("", "LIQUIDITY (whole units; reserved = promised to open bids and holds)");
  const liquidityRows = status.chains.flatMap((c) =>
    c.assets.map((a) => {
      const known = names.get(assetKey(c.chainId, a.assetId));
      const decimals = known?.decimals;
      const available = a.liquidity === undefined ? undefined : String(BigInt(a.liquidity) - BigInt(a.reserved ?? "0"));
      return [
        String(c.chainId),
        known?.name ?? a.assetId,
        wholeUnits(a.liquidity, decimals),
        wholeUnits(a.reserved, decimals),
        wholeUnits(available, decimals),
        a.updatedAtMs === undefined ? "-" : age(Math.max(0, (status.atMs - a.updatedAtMs) / 1000)),
      ];
    }),
  );
  out.push(...table(["chain", "asset", "liquidity", "reserved", "available", "updated"], liquidityRows));

  out.push("", "PROCESSES");
  out.push(
    ...table(
      ["process", "pid", "alive", "ready", "lease", "heartbeat", ""],
      status.processes.map((p) => [
        p.processId,
        String(p.pid),
        p.alive ? "yes" : "NO",
        p.ready ? "yes" : "NO",
        leaseText(p.lease),
        age(p.ageSec),
        !p.alive ? "! no heartbeat for 15 s" : !p.ready ? "! not ready" : "",
      ]),
    ),
  );
  if (ledger !== undefined) out.push("", ...ledgerSection(status, names, ledger));
  return `${out.join("\n")}\n`;
}

/**
 * The books per chain and asset, exact: base-unit integers as the ledger sums them (NUMERIC, never a float),
 * so each can be checked against the chain to the wei; and each chain's latest reconciliation against the chain.
 */
function ledgerSection(status: StatusView, names: AssetNames, ledger: LedgerView): string[] {
  if (ledger.state === "off") return ["LEDGER", "off: the config has no `ledger` section (docs/accounting.md)"];
  if (ledger.state === "unavailable") return ["LEDGER", `! unavailable: ${ledger.reason}`];
  const out = [
    `LEDGER (all time to ${new Date(ledger.toSec * 1000).toISOString()}; exact base units: gas in wei of the ` +
      "native asset, a fee in the asset the swap paid out)",
  ];
  const reconcile = status.ledger === undefined || "unavailable" in status.ledger ? [] : status.ledger.reconciliation;
  const figures = new Map(ledger.assets.map((a) => [assetKey(a.chainId, a.assetId), a]));
  const keys = new Map<string, { chainId: number; assetId: string }>();
  for (const a of [...ledger.assets, ...reconcile]) keys.set(assetKey(a.chainId, a.assetId), a);
  const rows = [...keys.entries()]
    .sort(([, a], [, b]) => a.chainId - b.chainId || a.assetId.localeCompare(b.assetId))
    .map(([key, { chainId, assetId }]) => {
      const f = figures.get(key);
      const lines = reconcile.filter((r) => assetKey(r.chainId, r.assetId) === key);
      const drifting = lines.filter((r) => r.flagged);
      return [
        String(chainId),
        names.get(key)?.name ?? (assetId.toLowerCase() === ZeroAddress ? "native" : assetId),
        f?.feeEarned ?? "0",
        f?.relayerFeeEarned ?? "0",
        f?.gasSpentWei ?? "0",
        f?.net ?? "0",
        lines.length === 0 ? "-" : drifting.length === 0 ? "clean" : "DRIFT",
        [
          ...drifting.map((r) => `! ${r.subject} drift ${r.drift} over blocks ${r.fromBlock}-${r.toBlock}`),
          f !== undefined && f.feeUnknown > 0
            ? `! ${f.feeUnknown} claimed swap(s) without their receiving side booked: fee left out`
            : "",
        ]
          .filter((m) => m !== "")
          .join(", "),
      ];
    });
  out.push(...table(["chain", "asset", "fee earned", "relayer fee", "gas spent", "net", "reconciled", ""], rows));
  out.push(reconcileLine(status));
  return out;
}

/** Each chain's latest reconciliation run: clean or drifting, to which block, when. */
function reconcileLine(status: StatusView): string {
  const ledger = status.ledger;
  if (ledger === undefined) return "reconciliation: not in GET /status";
  if ("unavailable" in ledger) return `! reconciliation: ${ledger.unavailable}`;
  const chains = status.chains.map((c) => {
    const lines = ledger.reconciliation.filter((r) => r.chainId === c.chainId);
    if (lines.length === 0) return `${c.chainId} not run yet`;
    const flagged = lines.some((r) => r.flagged);
    return `${c.chainId} ${flagged ? "DRIFT" : "clean"} to block ${lines[0].toBlock} at ${lines[0].checkedAt}`;
  });
  return `${ledger.drift ? "! " : ""}reconciliation: ${chains.join("; ")}`;
}

/** `active (term 3)`; for a poller of several chains each chain's, `1337 active (term 3), 1338 standby`. */
function leaseText(lease: StatusView["processes"][number]["lease"]): string {
  const one = (l: { role: string; term?: number }): string =>
    `${l.role}${l.term === undefined ? "" : ` (term ${l.term})`}`;
  if (!lease) {
    return "";
  }
  return lease.chains ? lease.chains.map((c) => `${c.chainId} ${one(c)}`).join(", ") : one(lease);
}
