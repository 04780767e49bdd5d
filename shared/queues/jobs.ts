import Joi from "joi";

/**
 * The transaction queue's contract: job names, their data, their Joi schema and their deterministic ids.
 * Producers (admin API, poller) and the consumer (submitter) import these and nothing else.
 * Job data is stored in clear text in Redis: it never carries a key, token or signature of the router.
 */
export const TX_JOB = {
  removeLiquidity: "remove-liquidity",
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

export interface TxJobDataByName {
  [TX_JOB.removeLiquidity]: RemoveLiquidityJobData;
}
export type TxJobData = TxJobDataByName[TxJobName];

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

const address = Joi.string().pattern(/^0x[0-9a-fA-F]{40}$/);
const decimal = Joi.string().pattern(/^[0-9]+$/);
const chainId = Joi.number().integer().min(1);
const bytes32 = Joi.string().pattern(/^0x[0-9a-fA-F]{64}$/);

export const TX_JOB_SCHEMAS: Readonly<Record<TxJobName, Joi.ObjectSchema>> = {
  [TX_JOB.removeLiquidity]: Joi.object<RemoveLiquidityJobData>({
    chainId: chainId.required(),
    assetId: address.required(),
    amount: decimal.required(),
    recipientAddress: address.required(),
    requestId: Joi.string().pattern(/^[A-Za-z0-9_-]{1,100}$/).required(),
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

export { bytes32 as BYTES32_SCHEMA };
