/**
 * `npm run bench:inventory`: how far each chain's share of a pool drifts under a one-sided flow of swaps, with and
 * without the auction's inventory decline (docs/auction.md, "Inventory decline"). Pure: the pool's figures go
 * through shared/protocol/inventory.ts (assessPool, receivingKeep) and the decision is the reservation script's
 * inequality (balance − hard holds − amountReceived ≥ keep); each swap settles before the next (no holds), the
 * router fee is the original's 0.05 % and the gas fee a flat 0.8 token. Deterministic (seeded), so runs compare.
 *
 * Flows: `one-sided` (every swap A → B), `mostly` (80 % A → B, 20 % B → A). Pool: 1 000 000 tokens on each of
 * A (6 decimals) and B (18 decimals), targets 50/50, minimum 30 %, floor 100 000 on B. Sizes 1 000–20 000 tokens.
 * Environment: BENCH_SWAPS (default 400).
 */
import { assessPool, receivingKeep, toCommon, type ChainFigures, type ChainTarget } from "../shared/protocol/inventory";

const SWAPS = Number(process.env.BENCH_SWAPS ?? 400);
const E6 = 10n ** 6n;
const E18 = 10n ** 18n;
const MINIMUM_PERCENT = 30;
const FLOOR_B = 100_000n * E18;

/** A chain of the simulated pool: its unlocked balance moves with each swap. */
type Chain = { -readonly [K in keyof (ChainFigures & ChainTarget)]: (ChainFigures & ChainTarget)[K] };

interface Run {
  readonly flow: string;
  readonly rule: boolean;
  readonly served: number;
  readonly declined: number;
  readonly refused: number;
  /** Whole tokens carried. */
  readonly volume: number;
  readonly minShareB: number;
  readonly finalShareB: number;
  readonly checkpoints: number[];
}

/** Mulberry32: a small seeded PRNG, so the runs with and without the rule see the same requests. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function simulate(flow: "one-sided" | "mostly", rule: boolean): Run {
  const random = prng(42);
  const chains: Chain[] = [
    {
      chainId: 1,
      assetId: "A",
      decimals: 6,
      unlocked: 1_000_000n * E6,
      locked: 0n,
      promised: 0n,
      owed: 0n,
      targetPercent: 50,
      minimumPercent: MINIMUM_PERCENT,
      floor: 0n,
    },
    {
      chainId: 2,
      assetId: "B",
      decimals: 18,
      unlocked: 1_000_000n * E18,
      locked: 0n,
      promised: 0n,
      owed: 0n,
      targetPercent: 50,
      minimumPercent: MINIMUM_PERCENT,
      floor: FLOOR_B,
    },
  ];
  let served = 0;
  let declined = 0;
  let refused = 0;
  let volume = 0;
  let minShareB = 50;
  const checkpoints: number[] = [];
  for (let i = 0; i < SWAPS; i += 1) {
    const tokens = BigInt(1_000 + Math.floor(random() * 19_000));
    const reverse = flow === "mostly" && random() < 0.2;
    const [from, to] = reverse ? [chains[1], chains[0]] : [chains[0], chains[1]];
    const amountIn = tokens * 10n ** BigInt(from.decimals);
    const converted = (amountIn * 10n ** BigInt(to.decimals)) / 10n ** BigInt(from.decimals);
    const out = (converted * 9995n) / 10000n - (8n * 10n ** BigInt(to.decimals)) / 10n;
    if (to.unlocked < out) {
      refused += 1; // NotEnoughLiquidity: the chain is empty
    } else {
      let ok = true;
      if (rule) {
        const assessed = assessPool(chains);
        const others = assessed
          .filter((c) => c !== assessed[chains.indexOf(to)])
          .reduce((s, c) => s + c.totalCommon, 0n);
        const keep = receivingKeep({
          othersCommon: others,
          incomingCommon: toCommon(amountIn, from.decimals),
          minimumPercent: to.minimumPercent,
          floor: to.floor,
          decimals: to.decimals,
        });
        ok = to.unlocked - out >= keep;
      }
      if (ok) {
        to.unlocked -= out;
        from.unlocked += amountIn;
        served += 1;
        volume += Number(tokens);
      } else {
        declined += 1;
      }
    }
    const shareB = assessPool(chains)[1].sharePercent ?? 0;
    minShareB = Math.min(minShareB, shareB);
    if ((i + 1) % (SWAPS / 8) === 0) checkpoints.push(shareB);
  }
  return {
    flow,
    rule,
    served,
    declined,
    refused,
    volume,
    minShareB,
    finalShareB: assessPool(chains)[1].sharePercent ?? 0,
    checkpoints,
  };
}

function main(): void {
  console.log(
    `bench:inventory: ${SWAPS} swaps per run, pool 1 000 000 + 1 000 000, minimum ${MINIMUM_PERCENT} %, floor on B 100 000`,
  );
  console.log(
    "flow       rule  served  declined  empty  volume (tokens)  B share min %  B final %  B share every 1/8 of the run (%)",
  );
  for (const flow of ["one-sided", "mostly"] as const) {
    for (const rule of [false, true]) {
      const r = simulate(flow, rule);
      console.log(
        [
          r.flow.padEnd(9),
          (r.rule ? "on" : "off").padEnd(4),
          String(r.served).padStart(6),
          String(r.declined).padStart(9),
          String(r.refused).padStart(6),
          String(r.volume).padStart(16),
          r.minShareB.toFixed(2).padStart(13),
          r.finalShareB.toFixed(2).padStart(10),
          " " + r.checkpoints.map((c) => c.toFixed(1)).join(" "),
        ].join(" "),
      );
    }
  }
}

main();
