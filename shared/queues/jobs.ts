import Joi from "joi";
import {
  ADDRESS_SCHEMA,
  BYTES32_SCHEMA,
  CHAIN_ID_SCHEMA,
  HEX_BYTES_SCHEMA,
  TRANSACTION_DATA_SCHEMA,
  UINT256_DECIMAL_SCHEMA,
  UNIX_SECONDS_SCHEMA,
} from "../protocol/transaction-data-schema";
import type { TransactionData } from "../protocol/types";

/**
 * The transaction queue's contract: job names, their data, their Joi schema and their deterministic ids.
 * Producers (admin API, poller) and the consumer (submitter) import these and nothing else.
 * Job data is stored in clear text in Redis: it never carries a key, token or signature of the router.
 */
export const TX_JOB = {
  removeLiquidity: "remove-liquidity",
  /** On the receiving chain: lock the router's liquidity for the user (TransactionManager.prepare). */
  prepareReceiver: "prepare-receiver",
  /** On the sending chain: claim the user's locked funds with the user's fulfill signature. */
  fulfillSender: "fulfill-sender",
  /** On the sending chain: refund the user (funds go to sendingChainFallback). */
  cancelSender: "cancel-sender",
  /** On the receiving chain: after expiry, return the router's locked liquidity. */
  cancelReceiver: "cancel-receiver",
  /**
   * On the receiving chain: the user's own fulfill, relayed for them (metatx.request, docs/relaying.md): sent
   * by the signer straight to the TransactionManager, which pays `relayerFee` to the sender.
   */
  relayFulfill: "relay-fulfill",
  /**
   * The router's wallet adds its own funds to a router's liquidity (TransactionManager.addLiquidityFor): an
   * ERC-20 allowance step first when the allowance lacks (its own send record), then the add (docs/submitter.md).
   */
  addLiquidityFor: "add-liquidity-for",
} as const;
export type TxJobName = (typeof TX_JOB)[keyof typeof TX_JOB];

export interface RemoveLiquidityJobData {
  readonly chainId: number;
  /** Checksummed; the zero address is the native asset. */
  readonly assetId: string;
  /** Base units, decimal integer string. */
  readonly amount: string;
  /** Checksummed. Ignored in router-contract mode: the Router contract pays its own recipient. */
  readonly recipientAddress: string;
  /** Correlates the API request, the job and its log lines. */
  readonly requestId: string;
}

export interface AddLiquidityForJobData {
  readonly chainId: number;
  /** Checksummed; the zero address is the native asset (sent as the call's value). */
  readonly assetId: string;
  /** Base units, decimal integer string. */
  readonly amount: string;
  /** Checksummed: the router credited (the signer, the Router contract, or the router a migration moves to). */
  readonly router: string;
  /** Correlates the API request, the job and its log lines. */
  readonly requestId: string;
}

/** The sending-side prepare as observed on chain; everything the receiving prepare must be checked against. */
export interface SenderPrepareData {
  /** The sending chain. */
  readonly chainId: number;
  readonly txData: TransactionData;
  readonly encryptedCallData: string;
  readonly encodedBid: string;
  readonly bidSignature: string;
  readonly prepareTransactionHash: string;
  /** Block timestamp of the sending prepare, unix seconds. */
  readonly preparedTimestamp?: number;
}

export interface PrepareReceiverJobData {
  /** The receiving chain: the queue's chain. */
  readonly chainId: number;
  readonly sender: SenderPrepareData;
}

export interface FulfillSenderJobData {
  /** The sending chain. */
  readonly chainId: number;
  /** The sending side's TransactionData (its own amount, expiry and preparedBlockNumber). */
  readonly txData: TransactionData;
  /** From the receiving-side fulfill: the user's signature (public on chain), relayer fee and call data. */
  readonly signature: string;
  readonly relayerFee: string;
  readonly callData: string;
  readonly receiverFulfillTransactionHash: string;
}

export interface CancelSenderJobData {
  /** The sending chain. */
  readonly chainId: number;
  readonly txData: TransactionData;
  /** Why the router cancels, for logs and the job record (e.g. "receiver-cancelled", "sender-expired"). */
  readonly reason: string;
  /** Set only by an admin's POST /cancel-sender with `"force": true`: skips the receiver-side safety check. */
  readonly force: boolean;
  /**
   * The refund of a receiving prepare this router refused (the submitter's enqueueSenderRefund) or declined (the
   * poller's failed verification, plan-action.ts): the 780 s buffer is waived, since no receiving prepare of ours
   * exists or can still start (docs/decisions.md).
   */
  readonly afterOwnRefusal?: boolean;
  readonly requestId?: string;
}

export interface CancelReceiverJobData {
  /** The receiving chain. */
  readonly chainId: number;
  /** The receiving side's TransactionData. */
  readonly txData: TransactionData;
  readonly reason: string;
}

export interface RelayFulfillJobData {
  /** The receiving chain: the queue's chain. */
  readonly chainId: number;
  /** The receiving side's TransactionData (its own amount, expiry and preparedBlockNumber). */
  readonly txData: TransactionData;
  /** Decimal integer string, receiving-asset units: paid by the contract to the relayer (our signer). */
  readonly relayerFee: string;
  /**
   * The user's fulfill signature (docs/protocol.md#user-signatures): public once the fulfill is mined, so it may sit in
   * job data.
   */
  readonly signature: string;
  readonly callData: string;
  /** Correlates the messaging request, the job and their log lines. */
  readonly requestId?: string;
}

export interface TxJobDataByName {
  [TX_JOB.removeLiquidity]: RemoveLiquidityJobData;
  [TX_JOB.prepareReceiver]: PrepareReceiverJobData;
  [TX_JOB.fulfillSender]: FulfillSenderJobData;
  [TX_JOB.cancelSender]: CancelSenderJobData;
  [TX_JOB.cancelReceiver]: CancelReceiverJobData;
  [TX_JOB.relayFulfill]: RelayFulfillJobData;
  [TX_JOB.addLiquidityFor]: AddLiquidityForJobData;
}
export type TxJobData = TxJobDataByName[TxJobName];

/**
 * The expiry (unix seconds, either side's) of the transfer a job acts on; undefined for a job that acts on no
 * transfer (remove-liquidity, add-liquidity-for). What the job leaves behind in Redis is kept until that transfer ended
 * (shared/protocol/retention.ts).
 */
export function transferExpiryOf(data: TxJobData): number | undefined {
  if ("sender" in data) return data.sender.txData.expiry;
  if ("txData" in data) return data.txData.expiry;
  return undefined;
}

export interface TxJobResult {
  readonly transactionHash: string;
  readonly blockNumber: number;
  /** True when the job found its effect already on chain and sent nothing. */
  readonly noop?: boolean;
}

/**
 * Reported through `job.updateProgress` the moment the submitter has broadcast a transaction, so the admin
 * API can answer with the hash without waiting for confirmations. A bumped replacement reports again.
 */
export interface TxJobProgress {
  readonly stage: "broadcast";
  readonly transactionHash: string;
  readonly nonce: number;
}

export function isTxJobProgress(value: unknown): value is TxJobProgress {
  const v = value as Partial<TxJobProgress> | null;
  return typeof v === "object" && v !== null && v.stage === "broadcast" && typeof v.transactionHash === "string";
}

const address = ADDRESS_SCHEMA;
const decimal = UINT256_DECIMAL_SCHEMA;
const chainId = CHAIN_ID_SCHEMA;
const bytes32 = BYTES32_SCHEMA;
const hexBytes = HEX_BYTES_SCHEMA;
const unixSeconds = UNIX_SECONDS_SCHEMA;
const txDataSchema = TRANSACTION_DATA_SCHEMA;

export const TX_JOB_SCHEMAS: Readonly<Record<TxJobName, Joi.ObjectSchema>> = {
  [TX_JOB.removeLiquidity]: Joi.object<RemoveLiquidityJobData>({
    chainId: chainId.required(),
    assetId: address.required(),
    amount: decimal.required(),
    recipientAddress: address.required(),
    requestId: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{1,100}$/)
      .required(),
  }),
  [TX_JOB.prepareReceiver]: Joi.object<PrepareReceiverJobData>({
    chainId: chainId.required(),
    sender: Joi.object<SenderPrepareData>({
      chainId: chainId.required(),
      txData: txDataSchema.required(),
      encryptedCallData: hexBytes.required(),
      encodedBid: hexBytes.required(),
      bidSignature: hexBytes.required(),
      prepareTransactionHash: bytes32.required(),
      preparedTimestamp: unixSeconds,
    }).required(),
  }),
  [TX_JOB.fulfillSender]: Joi.object<FulfillSenderJobData>({
    chainId: chainId.required(),
    txData: txDataSchema.required(),
    signature: hexBytes.required(),
    relayerFee: decimal.required(),
    callData: hexBytes.required(),
    receiverFulfillTransactionHash: bytes32.required(),
  }),
  [TX_JOB.cancelSender]: Joi.object<CancelSenderJobData>({
    chainId: chainId.required(),
    txData: txDataSchema.required(),
    reason: Joi.string().max(200).required(),
    force: Joi.boolean().required(),
    afterOwnRefusal: Joi.boolean(),
    requestId: Joi.string().pattern(/^[A-Za-z0-9_-]{1,100}$/),
  }),
  [TX_JOB.cancelReceiver]: Joi.object<CancelReceiverJobData>({
    chainId: chainId.required(),
    txData: txDataSchema.required(),
    reason: Joi.string().max(200).required(),
  }),
  [TX_JOB.relayFulfill]: Joi.object<RelayFulfillJobData>({
    chainId: chainId.required(),
    txData: txDataSchema.required(),
    relayerFee: decimal.required(),
    signature: hexBytes.required(),
    callData: hexBytes.required(),
    requestId: Joi.string().pattern(/^[A-Za-z0-9_.-]{1,100}$/),
  }),
  [TX_JOB.addLiquidityFor]: Joi.object<AddLiquidityForJobData>({
    chainId: chainId.required(),
    assetId: address.required(),
    amount: decimal.required(),
    router: address.required(),
    requestId: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{1,100}$/)
      .required(),
  }),
};

/** Validates job data at the consumer boundary; returns the problems, empty when valid. */
export function validateTxJobData(name: string, data: unknown): string[] {
  const schema = (TX_JOB_SCHEMAS as Record<string, Joi.ObjectSchema | undefined>)[name];
  if (!schema) {
    return [`unknown job name ${JSON.stringify(name)}`];
  }
  const { error } = schema.validate(data, { abortEarly: false, convert: false });
  return error ? error.details.map((d) => `${d.path.join(".") || "(data)"}: ${d.message}`) : [];
}

/**
 * Deterministic job ids from the business key, so that re-detection or a repeated request never enqueues
 * the same work twice. BullMQ refuses ':' in custom ids and treats an all-digit id as its own counter.
 */
export function txJobId(name: TxJobName, businessKey: string): string {
  const id = `${name}-${businessKey}`;
  if (id.includes(":") || /^[0-9]+$/.test(id)) {
    throw new TypeError(`invalid job id ${JSON.stringify(id)}`);
  }
  return id;
}

/**
 * Business key of a transfer's jobs: the transaction id alone is chosen by the user, so another user could
 * reuse it to make our de-duplication swallow a victim's job; the (transactionId, user) pair cannot be forged.
 */
export function transferKey(transactionId: string, user: string): string {
  return `${transactionId}-${user}`.toLowerCase();
}

/**
 * The id the router itself gives a job of `name` with `data` (the admin API, the poller, the auction, the
 * submitter's own refunds): the request id of a withdrawal or a deposit (a migration's per-asset key), the transfer
 * of any other job. A job under any other id
 * was not enqueued by the router (a dashboard "add job"); the submitter refuses money jobs under such ids.
 */
export function ownTxJobId(name: TxJobName, data: TxJobData): string {
  if (name === TX_JOB.removeLiquidity || name === TX_JOB.addLiquidityFor) {
    return txJobId(name, (data as RemoveLiquidityJobData | AddLiquidityForJobData).requestId);
  }
  const txData = "sender" in data ? data.sender.txData : (data as { txData: TransactionData }).txData;
  return txJobId(name, transferKey(txData.transactionId, txData.user));
}

export { BYTES32_SCHEMA };
