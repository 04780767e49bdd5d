import { getAddress } from "ethers";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { chainConfigFor } from "../../shared/process/process-env";
import type { ProcessResources } from "../../shared/process/process-resources";
import { stopOnce } from "../../shared/process/stop-once";
import { createSigner } from "../../shared/signer/create-signer";
import { createPollerResources, startPoller, type PollerOptions, type RunningPoller } from "./start-poller";

export interface StartPollersParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  /** CHAIN_ID's list: one poller each, in this order. */
  readonly chainIds: readonly number[];
  /** The same tuning for every chain's poller. */
  readonly options?: PollerOptions;
}

export interface RunningPollers {
  /** One per chain, in the order of `chainIds`. */
  readonly pollers: readonly RunningPoller[];
  /** Stops every chain's poller (each releases its own lease), then closes the shared connections; idempotent. */
  stop(): Promise<void>;
}

/**
 * Every chain one poller process polls: an independent poller per chain (its own lease, loop and cursor, its log
 * lines tagged with its chainId: start-poller.ts), sharing the config, the logger, the signer's address and one set
 * of connections (one Redis client, one provider and one queue per chain, which each chain's poller would otherwise
 * open again for the other side of its transfers). Each lease is taken and lost on its own: two processes of the
 * same chains may split them, and a standby process takes over each lease its holder drops.
 * Start fails as a whole, as one chain's process did: a chain missing from chainConfig is refused before anything
 * connects; a chain's poller failing to start rejects at once, and the others are stopped as they come up.
 */
export async function startPollers(params: StartPollersParams): Promise<RunningPollers> {
  const { config, chainIds } = params;
  if (chainIds.length === 0) {
    throw new RangeError("startPollers: no chain to poll");
  }
  chainIds.forEach((chainId) => chainConfigFor(config, chainId));
  const options = params.options ?? {};
  // The connections' own lines (a Redis error) are every chain's: they name them all.
  const logger = params.logger.child(chainIds.length === 1 ? { chainId: chainIds[0] } : { chainIds });
  // In diagnosticMode every poller idles and opens nothing (startPoller), so neither is made.
  const resources = config.diagnosticMode ? undefined : createPollerResources(config, logger, options);
  const signerAddress = config.diagnosticMode ? options.signerAddress : await signerAddressOf(config, options);

  const starting = chainIds.map((chainId) =>
    startPoller({ config, logger: params.logger, chainId, resources, options: { ...options, signerAddress } }),
  );
  let pollers: RunningPoller[];
  try {
    pollers = await Promise.all(starting);
  } catch (err) {
    void stopWhenStarted(starting, resources);
    throw err;
  }
  return {
    pollers,
    stop: stopOnce(async () => {
      await Promise.all(pollers.map((poller) => poller.stop()));
      await resources?.close();
    }),
  };
}

async function signerAddressOf(config: RouterConfig, options: PollerOptions): Promise<string> {
  return getAddress(
    options.signerAddress ??
      (await createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl }).getAddress()),
  );
}

/** After a failed start: each chain's poller that did start (or still does) is stopped, then the connections close. */
async function stopWhenStarted(
  starting: readonly Promise<RunningPoller>[],
  resources: ProcessResources | undefined,
): Promise<void> {
  await Promise.allSettled(starting.map((started) => started.then((poller) => poller.stop())));
  await resources?.close();
}
