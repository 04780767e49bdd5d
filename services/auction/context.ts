import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import type { Messaging } from "../../shared/messaging/types";
import type { RouterSigner } from "../../shared/signer/router-signer";
import type { PricedMethod } from "../../shared/protocol/gas-fee";
import type { TransferStore } from "../../shared/transfers/transfer-store";

/** A gas-consuming TransactionManager method the router prices (docs/protocol.md#gas-fee). */
export type { PricedMethod };

export interface GasFeeParams {
  readonly chainId: number;
  /** The asset the fee is expressed in (its price comes from the oracle; native = zero address). */
  readonly assetId: string;
  /** Decimals the result is expressed in. */
  readonly decimals: number;
  readonly method: PricedMethod;
  /** Gas added to the method's limit (call data of a relayed fulfill). */
  readonly extraGas?: bigint;
}

/**
 * Fees from caches that background refreshers keep fresh: never an RPC on the request path.
 * `undefined` means a value needed is cold (not fetched yet, or too old): the caller refuses with a reason.
 */
export interface FeeEstimator {
  gasFeeInAsset(params: GasFeeParams): bigint | undefined;
  /**
   * True when a fee in this asset has no price at all: an oracle is missing for the asset's or the native token's
   * price source, and the two are not the same source. Such a fee is 0, so it pays for nothing.
   */
  unpriced(chainId: number, assetId: string): boolean;
  /**
   * `amount` of the asset in USD at the oracle price the gas fee uses (chain 1's at the asset's mainnetEquivalent,
   * else its own chain's; 18-decimal USD); undefined without an oracle or a fresh price.
   */
  usdValue(chainId: number, assetId: string, amount: bigint, decimals: number): number | undefined;
  /** Decimals of a pool asset (18 for native); undefined while not yet read. */
  decimals(chainId: number, assetId: string): number | undefined;
}

/** Everything the auction process's handlers need, built once by start-auction (never per request). */
export interface AuctionContext {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly signer: RouterSigner;
  /** Checksummed signer address. */
  readonly signerAddress: string;
  /** The router in bids and transfers: the Router contract when configured, else the signer; checksummed. */
  readonly routerAddress: string;
  /** Plain Redis connection (reservations, rate limits, balances, transfer records). */
  readonly redis: Redis;
  readonly messaging: Messaging;
  readonly transfers: TransferStore;
  readonly fees: FeeEstimator;
  /** Producer handle of a configured chain's transaction queue; undefined for an unconfigured chain. */
  readonly txQueue: (chainId: number) => Queue | undefined;
  /**
   * A configured chain's provider (the refreshers' own, or one made on first use); undefined for an unconfigured
   * chain. Never used on the bid path; the relay path reads a chain only for a transfer this router prepares.
   */
  readonly chainProvider: (chainId: number) => ChainProvider | undefined;
  /** Wall clock in ms; a parameter so tests can move time. */
  readonly nowMs: () => number;
}
