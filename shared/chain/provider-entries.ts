import { FetchRequest, JsonRpcProvider, Network } from "ethers";
import type { Logger } from "../logging/create-logger";
import { redactUrl } from "../logging/redact";
import { ChainProviderConfigError } from "./errors";

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** One configured provider and what the head tracker last learnt of it. */
export interface Entry {
  readonly label: string;
  readonly provider: JsonRpcProvider;
  head?: number;
  healthy: boolean;
  lagging: boolean;
  /** eth_chainId answered a different chain: never used again (its reads would be another chain's state). */
  wrongChain: boolean;
  chainChecked: boolean;
}

/** The chain's http(s) URLs, each with its JsonRpcProvider (ws(s) URLs skipped with a warning, see createChainProvider). */
export function buildEntries(
  opts: { chainId: number; urls: readonly string[]; requestTimeoutMs?: number },
  logger: Logger,
): Entry[] {
  const network = Network.from(opts.chainId);
  const labels = new Set<string>();
  const entries: Entry[] = [];
  for (const url of opts.urls) {
    let label = redactUrl(url);
    if (/^wss?:/i.test(url)) {
      logger.warn("websocket provider skipped: list an http(s) URL instead", { at: "chain.provider", provider: label });
      continue;
    }
    if (labels.has(label)) {
      label = `${label}#${entries.length}`;
    }
    labels.add(label);
    const request = new FetchRequest(url);
    request.timeout = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // ethers retries a 429 up to 12 times with backoff; another provider is the faster way out.
    request.setThrottleParams({ maxAttempts: 2 });
    // No batching (one slow call must not hold others) and no 250 ms result cache (stale nonces).
    const provider = new JsonRpcProvider(request, network, {
      staticNetwork: network,
      batchMaxCount: 1,
      cacheTimeout: -1,
    });
    entries.push({ label, provider, healthy: true, lagging: false, wrongChain: false, chainChecked: false });
  }
  if (entries.length === 0) {
    throw new ChainProviderConfigError(`chain ${opts.chainId} has no http(s) provider URL`, { chainId: opts.chainId });
  }
  return entries;
}
