import { keccak256 } from "ethers";
import type { RouterError } from "../errors";
import type { Logger } from "../logging/create-logger";
import {
  ChainRequestError,
  InsufficientFundsError,
  NonceTooLowError,
  ReplacementUnderpricedError,
  RpcUnavailableError,
  TransactionAlreadyKnownError,
  TransactionRevertedError,
  toChainError,
} from "./errors";
import type { Entry } from "./provider-entries";

export interface BroadcastResult {
  readonly hash: string;
  /** Redacted URLs of the providers that took the transaction. */
  readonly acceptedBy: readonly string[];
  readonly alreadyKnownBy: readonly string[];
}

/** Most telling first: a nonce or funds problem explains a failed broadcast better than a dead provider. */
const BROADCAST_ERROR_PRIORITY: ReadonlyArray<abstract new (...args: never[]) => RouterError> = [
  NonceTooLowError,
  InsufficientFundsError,
  ReplacementUnderpricedError,
  TransactionRevertedError,
  ChainRequestError,
  RpcUnavailableError,
];

/** Sends to every target at once; succeeds if any took it or already had it, else throws the most telling error. */
export async function broadcastToAll(
  targets: Entry[],
  rawTx: string,
  chainId: number,
  logger: Logger,
): Promise<BroadcastResult> {
  const hash = keccak256(rawTx);
  const settled = await Promise.allSettled(targets.map((e) => e.provider.send("eth_sendRawTransaction", [rawTx])));
  const acceptedBy: string[] = [];
  const alreadyKnownBy: string[] = [];
  const errors: RouterError[] = [];
  settled.forEach((outcome, i) => {
    const label = targets[i].label;
    if (outcome.status === "fulfilled") {
      acceptedBy.push(label);
      return;
    }
    const err = toChainError(outcome.reason);
    if (err instanceof TransactionAlreadyKnownError) {
      alreadyKnownBy.push(label);
      return;
    }
    errors.push(err);
    const log = err instanceof RpcUnavailableError ? logger.warn : logger.debug;
    log("provider refused the transaction", {
      at: "chain.broadcast",
      provider: label,
      transactionHash: hash,
      code: err.code,
    });
  });
  if (acceptedBy.length > 0 || alreadyKnownBy.length > 0) {
    return { hash, acceptedBy, alreadyKnownBy };
  }
  for (const kind of BROADCAST_ERROR_PRIORITY) {
    const found = errors.find((e) => e instanceof kind);
    if (found) {
      throw found;
    }
  }
  throw new RpcUnavailableError(`chain ${chainId}: no provider to broadcast to`, { chainId, transactionHash: hash });
}
