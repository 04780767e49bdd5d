import { parseUnits } from "ethers";
import type { ChainConfig } from "../config/types";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { redactUrl } from "../logging/redact";
import { clampFee, type Fee } from "../protocol/gas";
import type { ChainProvider } from "./chain-provider";
import { GasPriceUnavailableError } from "./errors";

export const DEFAULT_STATION_TIMEOUT_MS = 3_000;
/** No real chain prices gas above 100 000 gwei; a station answering more is broken, not expensive. */
const MAX_SANE_GWEI = 100_000;

export interface GasPriceDeps {
  readonly provider: Pick<ChainProvider, "getFeeData">;
  readonly logger: Logger;
  /** Injected for tests; the global fetch by default. */
  readonly fetch?: typeof fetch;
  readonly stationTimeoutMs?: number;
}

/**
 * The price for a new transaction (docs/protocol.md#gas-price, minus the original's unbounded trust in stations):
 * 1. configured gas stations in order, `{fast: gwei}` (legacy) or Polygon's `{fast: {maxFee, maxPriorityFee}}`;
 * 2. the provider: EIP-1559 fields when the latest block has a base fee, else the legacy gas price;
 * 3. `defaultInitialGasPrice` (legacy).
 * Whatever the source, never above `gasPriceMaximum`.
 */
export async function getGasPrice(chain: ChainConfig, deps: GasPriceDeps): Promise<Fee> {
  const maximum = BigInt(chain.gasPriceMaximum);
  for (const url of chain.gasStations) {
    const fee = await fromStation(url, deps);
    if (fee) {
      return clampFee(fee, maximum);
    }
  }
  try {
    const data = await deps.provider.getFeeData();
    // ethers fills maxFeePerGas only when the latest block carries baseFeePerGas.
    if (data.maxFeePerGas !== null && data.maxPriorityFeePerGas !== null) {
      return clampFee(
        { type: 2, maxFeePerGas: data.maxFeePerGas, maxPriorityFeePerGas: data.maxPriorityFeePerGas },
        maximum,
      );
    }
    if (data.gasPrice !== null && data.gasPrice > 0n) {
      return clampFee({ type: 0, gasPrice: data.gasPrice }, maximum);
    }
  } catch (err) {
    deps.logger.warn("provider gas price unavailable", {
      at: "chain.gasPrice",
      chainId: chain.chainId,
      error: errorMessage(err),
    });
  }
  if (chain.defaultInitialGasPrice !== undefined) {
    return clampFee({ type: 0, gasPrice: BigInt(chain.defaultInitialGasPrice) }, maximum);
  }
  throw new GasPriceUnavailableError(
    `chain ${chain.chainId}: no gas price from stations, providers or defaultInitialGasPrice`,
    {
      chainId: chain.chainId,
    },
  );
}

async function fromStation(url: string, deps: GasPriceDeps): Promise<Fee | undefined> {
  const doFetch = deps.fetch ?? fetch;
  try {
    const res = await doFetch(url, {
      signal: AbortSignal.timeout(deps.stationTimeoutMs ?? DEFAULT_STATION_TIMEOUT_MS),
    });
    if (!res.ok) {
      throw new Error(`HTTP ${res.status}`);
    }
    const fee = parseStationAnswer((await res.json()) as unknown);
    if (!fee) {
      throw new Error("answer has no usable `fast` price");
    }
    return fee;
  } catch (err) {
    deps.logger.warn("gas station unavailable", {
      at: "chain.gasPrice",
      station: redactUrl(url),
      error: errorMessage(err),
    });
    return undefined;
  }
}

/** `{fast: 31.5}` → legacy; `{fast: {maxFee: 40, maxPriorityFee: 30}}` → type 2; both in gwei. */
export function parseStationAnswer(body: unknown): Fee | undefined {
  const fast = (body as { fast?: unknown } | null)?.fast;
  if (isGwei(fast)) {
    return { type: 0, gasPrice: gweiToWei(fast) };
  }
  const { maxFee, maxPriorityFee } = (fast ?? {}) as { maxFee?: unknown; maxPriorityFee?: unknown };
  if (isGwei(maxFee) && isGwei(maxPriorityFee)) {
    const maxFeePerGas = gweiToWei(maxFee);
    const tip = gweiToWei(maxPriorityFee);
    return { type: 2, maxFeePerGas, maxPriorityFeePerGas: tip < maxFeePerGas ? tip : maxFeePerGas };
  }
  return undefined;
}

function isGwei(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 && value <= MAX_SANE_GWEI;
}

/** toFixed(9): gwei has 9 decimals in wei, and a float's shortest form can carry more (or an exponent). */
function gweiToWei(gwei: number): bigint {
  return parseUnits(gwei.toFixed(9), "gwei");
}

/**
 * One price per chain per `maxAgeMs` instead of a station or RPC round trip per transaction: concurrent callers
 * share the refresh in flight, and a failed refresh is not cached (the next caller tries again).
 */
export function cachedGasPrice(
  load: () => Promise<Fee>,
  maxAgeMs: number,
  now: () => number = Date.now,
): () => Promise<Fee> {
  let cached: { fee: Fee; atMs: number } | undefined;
  let inFlight: Promise<Fee> | undefined;
  return () => {
    if (cached && now() - cached.atMs < maxAgeMs) {
      return Promise.resolve(cached.fee);
    }
    inFlight ??= load()
      .then((fee) => {
        cached = { fee, atMs: now() };
        return fee;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
}
