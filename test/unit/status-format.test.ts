import { assetKey, formatStatus, wholeUnits, type AssetNames, type StatusView } from "../../scripts/status-format";
import captured from "./fixtures/status-local-stack.json";

/** GET /status as `npm run local` answered it after its demo swap (fixtures/status-local-stack.json). */
const body = captured as StatusView;
const TEST = "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512";
const ETH = "0x0000000000000000000000000000000000000000";
const names: AssetNames = new Map([
  [assetKey(1337, TEST), { name: "TEST", decimals: 18 }],
  [assetKey(1338, TEST), { name: "TEST", decimals: 18 }],
  [assetKey(1337, ETH), { name: "ETH", decimals: 18 }],
  [assetKey(1338, ETH), { name: "ETH", decimals: 18 }],
]);
const lines = (status: StatusView, n: AssetNames = names): string[] => formatStatus(status, n).split("\n");
const rowOf = (all: string[], ...cells: string[]): string | undefined =>
  all.find((l) => cells.every((c) => l.split(/\s{2,}/).some((cell) => cell.trim() === c)));

describe("npm run status: /status as tables", () => {
  it("shows the modes and the drain verdict in its first line", () => {
    expect(lines(body)[0]).toBe(
      "router status at 2026-11-28T03:13:50.936Z · network local · clean-up off · diagnostic off · drained yes",
    );
    const draining = { ...body, drained: false, modes: { ...body.modes, cleanUpMode: true, cleanUpModeSinceMs: 0 } };
    expect(lines(draining)[0]).toContain("clean-up ON since 1970-01-01T00:00:00.000Z · diagnostic off · drained no");
  });

  it("per chain: head, lag, head age, gas against minGas in ETH, open transfers, queues, pending", () => {
    const all = lines(body);
    expect(all).toContain("CHAINS");
    // head 19, lag 0, 9999925209308871700 wei of gas, minGas 0.1, no open transfer, one completed job (not shown)
    expect(rowOf(all, "1337", "19", "0", "0.9 s", "9.999925", "0.1")).toBeDefined();
    expect(rowOf(all, "1338", "17", "0", "0.1 s", "9.999878", "0.1")).toBeDefined();
    const low = { ...body, chains: body.chains.map((c) => (c.chainId === 1338 ? { ...c, gasLow: true } : c)) };
    expect(rowOf(lines(low), "1338", "17")).toMatch(/! gas below minGas$/);
    expect(rowOf(all, "1338", "17")).not.toContain("!");
  });

  it("liquidity per pool asset by name, in whole units, with what bids reserve and what is left", () => {
    const all = lines(body);
    // 99901590768948980000000 base units, 18 decimals: shown to 6 decimals, rounded down.
    expect(rowOf(all, "1338", "TEST", "99901.590768", "0", "99901.590768", "10.2 s")).toBeDefined();
    expect(rowOf(all, "1337", "TEST", "100100", "0", "100100", "9.0 s")).toBeDefined();
    expect(rowOf(all, "1337", "ETH", "100")).toBeDefined();
    const reserved = {
      ...body,
      chains: body.chains.map((c) =>
        c.chainId === 1338
          ? { ...c, assets: c.assets.map((a) => (a.assetId === TEST ? { ...a, reserved: "1500000000000000000" } : a)) }
          : c,
      ),
    };
    expect(rowOf(lines(reserved), "1338", "TEST", "99901.590768", "1.5", "99900.090768")).toBeDefined();
    // Unknown decimals (the chain did not answer): base units, never a guess.
    const unnamed = new Map([...names].filter(([key]) => key !== assetKey(1338, ETH)));
    expect(rowOf(lines(body, unnamed), "1338", ETH, "100000000000000000000 (base units)")).toBeDefined();
  });

  it("processes alive and ready, pollers with their lease, and a dead or unready one marked", () => {
    const all = lines(body);
    // One poller process of both chains: each chain's lease.
    const leases = "1337 active (term 1), 1338 active (term 1)";
    expect(rowOf(all, "poller-1337+1338-0", "21673", "yes", "yes", leases, "0.4 s")).toBeDefined();
    // One chain's process (POLLER_PROCESS_PER_CHAIN=1): its lease alone.
    const perChain = {
      ...body,
      processes: body.processes.map((p) =>
        p.role === "poller" ? { ...p, processId: "poller-1337-0", lease: { role: "standby" } } : p,
      ),
    };
    expect(rowOf(lines(perChain), "poller-1337-0", "21673", "yes", "yes", "standby", "0.4 s")).toBeDefined();
    expect(rowOf(all, "auction-1", "21709", "yes", "yes")).toBeDefined();
    const dead = {
      ...body,
      processes: body.processes.map((p) =>
        p.processId === "submitter-1338-0"
          ? { ...p, alive: false }
          : p.processId === "admin-0"
            ? { ...p, ready: false }
            : p,
      ),
    };
    expect(rowOf(lines(dead), "submitter-1338-0", "NO")).toMatch(/! no heartbeat for 15 s$/);
    expect(rowOf(lines(dead), "admin-0", "yes", "NO")).toMatch(/! not ready$/);
  });

  it("the books: exact base units per chain and asset, a fee left out marked, the reconciliation unreadable said", () => {
    const ledger = {
      state: "on" as const,
      toSec: 1_764_000_000,
      assets: [
        {
          chainId: 1338,
          assetId: TEST,
          feeEarned: "9007199254740993",
          relayerFeeEarned: "0",
          gasSpentWei: "0",
          net: "9007199254740993",
          feeUnknown: 2,
        },
      ],
    };
    const unread = { ...body, ledger: { unavailable: "the ledger database did not answer" } };
    const all = formatStatus(unread, names, ledger).split("\n");
    // 2^53 + 1: a float would print ...992.
    expect(rowOf(all, "1338", "TEST", "9007199254740993", "0", "0", "9007199254740993", "-")).toMatch(
      /! 2 claimed swap\(s\) without their receiving side booked: fee left out$/,
    );
    expect(all).toContain("! reconciliation: the ledger database did not answer");
    // Without a ledger view (the caller asked nothing of the books) no section at all.
    expect(lines(body).some((l) => l.startsWith("LEDGER"))).toBe(false);
  });

  it("whole units: rounded down to 6 decimals, trailing zeros dropped", () => {
    expect(wholeUnits("1999999999999999999", 18)).toBe("1.999999");
    expect(wholeUnits("1000000", 6)).toBe("1");
    expect(wholeUnits("123456789", 6)).toBe("123.456789");
    expect(wholeUnits(undefined, 18)).toBe("-");
  });
});
