import { liveChildPids } from "../harness/child-process";
import { usePostgres } from "../harness/postgres";
import { RECEIVING, SENDING, startLifecycleStack, type LifecycleStack } from "./lifecycle-fixture";
import {
  CLAIM_DELAY_SEC,
  RELAYER_FEE,
  SWAP_AMOUNT,
  seedBookedSwaps,
  serveLedgerAdmin,
  type BookedSwaps,
} from "./pnl-fixture";
import type { PnlReport } from "../../shared/ledger/pnl-reads";
import type { SwapView } from "../../shared/protocol/ledger";
import { loadConfig } from "../../shared/config";
import { validConfig } from "../unit/config-fixtures";
import { runReport } from "../../scripts/report";

const TOKEN = "lifecycle-test-admin-token-0123456789";

interface TxRow {
  chain_id: number;
  hash: string;
  kind: string;
  cost_wei: string;
  cost_usd: string | null;
  block_time: Date;
  transaction_id: string | null;
}

/**
 * GET /pnl and GET /ledger over books the real ledger process booked from real swaps on two anvil chains: the
 * period's figures must be the sum of the swaps' GET /ledger entries and of the booked rows, and the gas to the
 * wei of the chains' receipts.
 */
describe("GET /pnl and GET /ledger (real swaps on anvil, booked by the ledger process, PostgreSQL)", () => {
  const pg = usePostgres();
  let s: LifecycleStack;
  let seed: BookedSwaps;
  let admin: Awaited<ReturnType<typeof serveLedgerAdmin>>;
  let rows: TxRow[];
  const get = async (path: string, token = TOKEN) => {
    const res = await fetch(`${admin.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const pnl = async (query: string): Promise<PnlReport> => {
    const res = await get(`/pnl?${query}`);
    expect(res.status).toBe(200);
    return res.body as unknown as PnlReport;
  };
  const sumUsd = (values: ReadonlyArray<string | null>) => values.reduce((sum, v) => sum + Number(v ?? 0), 0);

  beforeAll(async () => {
    s = await startLifecycleStack();
    seed = await seedBookedSwaps(s, pg, "ledger_pnl");
    admin = await serveLedgerAdmin(seed.config, s.signerAddress);
    rows = (await seed.pool.query<TxRow>("SELECT * FROM ledger_transactions ORDER BY block_time, hash")).rows;
  }, 240_000);

  afterAll(async () => {
    await admin?.stop();
    await seed?.pool.end();
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("the whole period: every booked transaction, to the wei of its receipt; totals equal the GET /ledger entries plus the other rows", async () => {
    // Every transaction of the router's signer is booked, at its receipt's cost; the user's are not.
    expect(rows.map((r) => r.kind).sort()).toEqual(
      ["add-liquidity", "approve", "cancel", "fulfill", "prepare", "relay"].sort(),
    );
    const weiByChain = new Map<number, bigint>();
    for (const row of rows) {
      const provider = row.chain_id === SENDING ? s.sending.provider : s.receiving.provider;
      const receipt = await provider.getTransactionReceipt(row.hash);
      expect(BigInt(row.cost_wei)).toBe((receipt?.gasUsed ?? 0n) * (receipt?.gasPrice ?? 0n));
      weiByChain.set(row.chain_id, (weiByChain.get(row.chain_id) ?? 0n) + BigInt(row.cost_wei));
    }

    const report = await pnl(`from=0&to=${seed.end}`);
    expect(report.from).toBe(0);
    expect(report.to).toBe(seed.end);
    expect(report.swaps).toEqual({ claimed: 1, cancelled: 1 });

    const claimed = (await get(`/ledger/${seed.claimedId}`)).body as unknown as SwapView;
    const cancelled = (await get(`/ledger/${seed.cancelledId}`)).body as unknown as SwapView;
    expect(claimed.status).toBe("claimed");
    expect(cancelled.status).toBe("cancelled");
    // The swap's fee: 10 TEST claimed, 9.995 locked for the user (1 USD per TEST); the relay's fee: 0.5 TEST.
    expect(claimed.feeEarned).toBe(((SWAP_AMOUNT * 5n) / 10000n).toString());
    expect(claimed.relayerFeeEarned).toBe(RELAYER_FEE.toString());
    expect(report.usd.volume).toBe(10);
    expect(report.usd.feeEarned).toBe(0.005);
    expect(report.usd.relayerFeeEarned).toBe(0.5);
    expect(report.usd.feeEarned).toBeCloseTo((claimed.usd.feeEarned ?? NaN) + (cancelled.usd.feeEarned ?? NaN), 12);
    expect(report.usd.relayerFeeEarned).toBeCloseTo(
      (claimed.usd.relayerFeeEarned ?? NaN) + (cancelled.usd.relayerFeeEarned ?? NaN),
      12,
    );
    // Gas: the swaps' entries plus every other row the signer paid (liquidity; the approval is unpriced).
    const swapIds = new Set([seed.claimedId, seed.cancelledId]);
    const otherRows = rows.filter((r) => !swapIds.has(r.transaction_id ?? ""));
    expect(otherRows.map((r) => r.kind).sort()).toEqual(["add-liquidity", "approve"]);
    expect(report.usd.gasCost).toBeCloseTo(
      (claimed.usd.gasCost ?? NaN) + (cancelled.usd.gasCost ?? NaN) + sumUsd(otherRows.map((r) => r.cost_usd)),
      12,
    );
    expect(report.usd.gasCost).toBeCloseTo(sumUsd(rows.map((r) => r.cost_usd)), 12);
    expect(report.usd.gasCost).toBeGreaterThan(0);
    expect(report.usd.net).toBeCloseTo(report.usd.feeEarned + report.usd.relayerFeeEarned - report.usd.gasCost, 12);
    // The one row without a price: counted, never summed as 0 silently.
    expect(rows.filter((r) => r.cost_usd === null).map((r) => r.hash)).toEqual([seed.unpricedHash]);
    expect(report.unpriced).toBe(1);

    // Per chain: gas to the wei of the receipts; the fee on the sending chain, the relay's on the receiving one.
    expect(report.chains).toEqual([
      {
        chainId: SENDING,
        gasSpentWei: String(weiByChain.get(SENDING)),
        transactions: 3,
        usd: {
          gasCost: expect.closeTo(sumUsd(rows.filter((r) => r.chain_id === SENDING).map((r) => r.cost_usd)), 12),
          feeEarned: 0.005,
          relayerFeeEarned: 0,
        },
      },
      {
        chainId: RECEIVING,
        gasSpentWei: String(weiByChain.get(RECEIVING)),
        transactions: 3,
        usd: {
          gasCost: expect.closeTo(sumUsd(rows.filter((r) => r.chain_id === RECEIVING).map((r) => r.cost_usd)), 12),
          feeEarned: 0,
          relayerFeeEarned: 0.5,
        },
      },
    ]);
    // Per asset, exact base units (npm run status's LEDGER): gas on each chain's native row to the wei of the
    // receipts; the claimed swap's fee and its relay's fee (GET /ledger's, in base units) on the receiving asset.
    const native = "0x0000000000000000000000000000000000000000";
    const gasRow = (chainId: number) => ({
      chainId,
      assetId: native,
      feeEarned: "0",
      relayerFeeEarned: "0",
      gasSpentWei: String(weiByChain.get(chainId)),
      net: String(-(weiByChain.get(chainId) ?? 0n)),
      feeUnknown: 0,
    });
    expect(report.assets).toEqual([
      gasRow(SENDING),
      gasRow(RECEIVING),
      {
        chainId: RECEIVING,
        assetId: report.routes[0].receivingAssetId.toLowerCase(),
        feeEarned: claimed.feeEarned,
        relayerFeeEarned: claimed.relayerFeeEarned,
        gasSpentWei: "0",
        net: String(BigInt(claimed.feeEarned ?? "0") + BigInt(claimed.relayerFeeEarned)),
        feeUnknown: 0,
      },
    ]);
    // Per route: both swaps, their own gas only.
    expect(report.routes).toHaveLength(1);
    const route = report.routes[0];
    expect(route).toMatchObject({
      sendingChainId: SENDING,
      sendingAssetId: s.sending.deployment.token.toLowerCase(),
      receivingChainId: RECEIVING,
      receivingAssetId: s.receiving.deployment.token.toLowerCase(),
      swaps: { claimed: 1, cancelled: 1 },
    });
    expect(route.usd.gasCost).toBeCloseTo((claimed.usd.gasCost ?? NaN) + (cancelled.usd.gasCost ?? NaN), 12);
    expect(route.usd.net).toBeCloseTo((claimed.usd.net ?? NaN) + (cancelled.usd.net ?? NaN), 12);
    // Per operation: one row per (kind, chain), wei to the receipt.
    expect(report.operations.map((o) => [o.kind, o.chainId, o.transactions]).sort()).toEqual(
      rows.map((r) => [r.kind, r.chain_id, 1]).sort(),
    );
    for (const op of report.operations) {
      const row = rows.find((r) => r.kind === op.kind && r.chain_id === op.chainId);
      expect(op.gasSpentWei).toBe(row?.cost_wei);
    }
  });

  it("a swap counts in the period of its claim; gas in the period it was paid; the hourly series adds up to the totals", async () => {
    // From the claim on: the swap and its fee, but not the receiving prepare and relay paid two hours before.
    const after = await pnl(`from=${seed.claimTime}&to=${seed.end}`);
    expect(after.swaps.claimed).toBe(1);
    expect(after.usd.feeEarned).toBe(0.005);
    expect(after.usd.relayerFeeEarned).toBe(0);
    const paidAfter = rows.filter((r) => r.block_time.getTime() / 1000 >= seed.claimTime);
    expect(paidAfter.map((r) => r.kind)).not.toContain("relay");
    expect(after.usd.gasCost).toBeCloseTo(sumUsd(paidAfter.map((r) => r.cost_usd)), 12);
    // Up to the claim: the relay's fee and gas, no swap claimed.
    const before = await pnl(`from=0&to=${seed.claimTime}`);
    expect(before.swaps.claimed).toBe(0);
    expect(before.usd.feeEarned).toBe(0);
    expect(before.usd.relayerFeeEarned).toBe(0.5);
    expect(before.usd.gasCost + after.usd.gasCost).toBeCloseTo(sumUsd(rows.map((r) => r.cost_usd)), 12);
    expect(CLAIM_DELAY_SEC).toBeGreaterThanOrEqual(3600);

    // Hourly buckets over the last 4 hours: every bucket listed, their sums equal the period's totals.
    const from = seed.end - 4 * 3600;
    const series = await pnl(`from=${from}&to=${seed.end}&step=3600`);
    expect(series.series?.map((b) => b.start)).toEqual([0, 1, 2, 3].map((i) => from + i * 3600));
    const total = (key: "feeEarned" | "gasCost" | "relayerFeeEarned" | "net") =>
      (series.series ?? []).reduce((sum, b) => sum + b.usd[key], 0);
    expect(total("feeEarned")).toBeCloseTo(series.usd.feeEarned, 12);
    expect(total("gasCost")).toBeCloseTo(series.usd.gasCost, 12);
    expect(total("relayerFeeEarned")).toBeCloseTo(series.usd.relayerFeeEarned, 12);
    expect(total("net")).toBeCloseTo(series.usd.net, 12);
    expect((series.series ?? []).filter((b) => b.usd.feeEarned !== 0)).toHaveLength(1);
    expect((series.series ?? []).filter((b) => b.usd.relayerFeeEarned !== 0)).toHaveLength(1);
  });

  it("refuses a bad range with 400 invalid_range naming the field; without a ledger section: 501 ledger_off", async () => {
    for (const [query, field] of [
      ["from=10&to=5", "from"],
      ["from=1.5", "from"],
      ["to=-3", "to"],
      ["from=abc", "from"],
      ["from=0&to=100&step=60", "step"],
      [`from=0&to=${3600 * 1001}&step=3600`, "step"],
    ] as const) {
      const res = await get(`/pnl?${query}`);
      expect({ query, status: res.status, error: res.body.error, field: res.body.field }).toEqual({
        query,
        status: 400,
        error: "invalid_range",
        field,
      });
    }
    expect((await get("/pnl", "wrong-token-wrong-token")).status).toBe(401);
    const off = await serveLedgerAdmin(seed.config, s.signerAddress, { ledgerReports: undefined });
    try {
      const res = await fetch(`${off.baseUrl}/pnl`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(501);
      expect(((await res.json()) as { error: string }).error).toBe("ledger_off");
      const list = await fetch(`${off.baseUrl}/ledger?limit=5`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(list.status).toBe(501);
    } finally {
      await off.stop();
    }
    expect(loadConfig(validConfig(), {}).config.ledger).toBeUndefined();
  });

  it("GET /ledger: the latest swaps first, each the GET /ledger/<id> object, paged by the `next` cursor", async () => {
    // The expected order, from the rows: latest booked event first; in the same second, the larger id first.
    const last = await seed.pool.query<{ id: string; t: string }>(
      `SELECT transaction_id AS id, extract(epoch FROM max(block_time))::bigint AS t
         FROM ledger_events WHERE side IS NOT NULL GROUP BY transaction_id`,
    );
    const expected = last.rows
      .sort((a, b) => Number(b.t) - Number(a.t) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .map((r) => r.id);
    expect([...expected].sort()).toEqual([seed.cancelledId, seed.claimedId].sort());

    const first = await get("/ledger?limit=1");
    expect(first.status).toBe(200);
    const page1 = first.body as unknown as { swaps: SwapView[]; next: string | null };
    expect(page1.swaps.map((v) => v.transactionId)).toEqual([expected[0]]);
    expect(page1.swaps[0]).toEqual((await get(`/ledger/${expected[0]}`)).body);
    const firstTime = last.rows.find((r) => r.id === expected[0])?.t;
    expect(page1.next).toBe(`${firstTime}_${expected[0]}`);
    const page2 = (await get(`/ledger?limit=1&before=${page1.next}`)).body as unknown as {
      swaps: SwapView[];
      next: string | null;
    };
    expect(page2.swaps.map((v) => v.transactionId)).toEqual([expected[1]]);
    expect(page2.swaps[0]).toEqual((await get(`/ledger/${expected[1]}`)).body);
    expect(page2.next).toBeNull();
    const all = (await get("/ledger")).body as unknown as { swaps: SwapView[]; next: string | null };
    expect(all.swaps.map((v) => v.transactionId)).toEqual(expected);
    expect(all.next).toBeNull();
    // A plain block time as the cursor: nothing at or after it.
    const none = (await get(`/ledger?before=${seed.claimTime - CLAIM_DELAY_SEC - 600}`)).body as { swaps: unknown[] };
    expect(none.swaps).toEqual([]);
    for (const query of ["limit=0", "limit=101", "limit=x", "before=yesterday"]) {
      const res = await get(`/ledger?${query}`);
      expect({ query, status: res.status, error: res.body.error }).toEqual({
        query,
        status: 400,
        error: "invalid_page",
      });
    }
  });

  it("npm run report: the /pnl figures as tables or CSV through the real admin API; the token never printed; a refusal exits non-zero", async () => {
    const printed: string[] = [];
    const report = (args: string[]) =>
      runReport(args, { baseUrl: admin.baseUrl, adminToken: TOKEN, out: (t) => printed.push(t), nowSec: seed.end });
    // --since 1d from the chains' clock: the whole seed (a few hours of chain time).
    const shown = await report(["--since", "1d"]);
    expect(shown).toEqual(await pnl(`from=${seed.end - 86_400}&to=${seed.end}`));
    const text = printed.join("");
    expect(text).toMatch(/\n\s+1\s+1\s+10\.0000\s+0\.0050\s+0\.5000\s/);
    expect(text).toContain(`${SENDING}:`);
    expect(text).toMatch(new RegExp(`\\n\\s*${RECEIVING}\\s+3\\s+\\d+`));
    expect(text).toContain("! Unpriced: 1 figure(s)");

    printed.length = 0;
    await report(["--since", String(seed.claimTime), "--until", String(seed.end), "--csv"]);
    const rows = printed.join("").trimEnd().split("\n");
    expect(rows[0]).toMatch(/^scope,from,to,/);
    expect(rows.slice(1).map((r) => r.split(",")[0])).toEqual(["total", "route", "chain", "chain"]);
    expect(rows[1].split(",")[1]).toBe(String(seed.claimTime));

    await expect(report(["--since", "1d", "--until", "2d"])).rejects.toThrow(/GET \/pnl answered 400 invalid_range/);
    await expect(report(["--until", "1d"])).rejects.toThrow(/--since is required/);
    await expect(
      runReport(["--since", "1d"], { baseUrl: admin.baseUrl, adminToken: "wrong-token-wrong", out: () => undefined }),
    ).rejects.toThrow(/answered 401/);
    expect(printed.join("")).not.toContain(TOKEN);
  });
});
