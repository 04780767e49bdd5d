/**
 * `npm run queues -- <command>`: the SRE's view of the router's queues (docs/operating.md), against the Redis
 * and prefix of the config file (ROUTER_CONFIG_FILE, or config.json, or the running local stack's
 * .local/config.json; REDIS_URL wins):
 *   list                          counts per state of every chain's queue (and whether it is paused)
 *   list QUEUE [STATE]            the job ids of a queue per state (up to 50 each), or of one state
 *   show JOB                      one job: data, attempts, last error, its transactions, its transfer's state
 *   retry JOB                     a failed job again; refused when its on-chain effect already happened
 *   retry-failed QUEUE            every failed job of a queue again, with the same refusal per job
 *   pause QUEUE | resume QUEUE    stop / restart handing jobs to the queue's submitter
 *   clean QUEUE STATE AGE         remove jobs in STATE (completed, failed, ...) older than AGE (30m, 12h, 7d)
 * Nothing printed carries a secret: job data goes through the log redactor with the config's secrets.
 */
import { Queue, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { RouterConfig } from "../shared/config/types";
import { errorMessage } from "../shared/errors";
import { createRedactor } from "../shared/logging/redact";
import { retryRefusal, transferSidesOf } from "../shared/metrics/retry-safety";
import { JOB_STATES, queueCounts, readTxRecord, type TxRecordView } from "../shared/metrics/router-state";
import { chainIdOfTxQueue, redisOptions, txQueueName } from "../shared/queues";
import { loadCliConfig } from "./cli-config";

export interface QueuesCliDeps {
  readonly config: RouterConfig;
  readonly redis: Redis;
  readonly out: (line: string) => void;
}

/** A command the CLI refuses (bad arguments, unknown job, a retry that could act twice): exit code 1. */
export class QueuesCliError extends Error {}

const USAGE =
  "usage: npm run queues -- list [QUEUE [STATE]] | show JOB | retry JOB | retry-failed QUEUE | pause QUEUE | resume QUEUE | clean QUEUE STATE AGE";
/** Job ids printed per state by `list QUEUE`: the newest first. */
const LIST_IDS_PER_STATE = 50;

/** --help, -h, help, or nothing: the usage, without loading a config. */
export function isHelp(args: readonly string[]): boolean {
  return args.length === 0 || ["--help", "-h", "help"].includes(args[0]);
}
const CLEANABLE = ["completed", "failed", "wait", "active", "delayed", "prioritized", "paused"] as const;

export async function runQueuesCommand(args: readonly string[], deps: QueuesCliDeps): Promise<void> {
  const queues = new Map<string, Queue>();
  for (const chain of Object.values(deps.config.chainConfig)) {
    const name = txQueueName(chain.chainId);
    const queue = new Queue(name, { connection: deps.redis, prefix: deps.config.redisPrefix });
    queue.on("error", () => undefined);
    queues.set(name, queue);
  }
  const queueNamed = (name: string | undefined): Queue => {
    const queue = name === undefined ? undefined : queues.get(name);
    if (!queue) {
      throw new QueuesCliError(`unknown queue ${JSON.stringify(name ?? "")}; queues: ${[...queues.keys()].join(", ")}`);
    }
    return queue;
  };
  const [command, ...rest] = args;
  try {
    switch (command) {
      case "list":
        return rest.length === 0
          ? await list(deps, [...queues.values()])
          : await listIds(deps, queueNamed(rest[0]), rest[1]);
      case "show":
        return await show(deps, await findJob(queues, rest[0]));
      case "retry":
        return await retry(deps, await findJob(queues, rest[0]));
      case "retry-failed":
        return await retryFailed(deps, queueNamed(rest[0]));
      case "pause":
        await queueNamed(rest[0]).pause();
        deps.out(`${rest[0]}: paused (active jobs finish; no new job starts until resume)`);
        return;
      case "resume":
        await queueNamed(rest[0]).resume();
        deps.out(`${rest[0]}: resumed`);
        return;
      case "clean":
        return await clean(deps, queueNamed(rest[0]), rest[1], rest[2]);
      default:
        throw new QueuesCliError(USAGE);
    }
  } finally {
    await Promise.all([...queues.values()].map((q) => q.close().catch(() => undefined)));
  }
}

async function list(deps: QueuesCliDeps, queues: readonly Queue[]): Promise<void> {
  const header = ["queue", ...JOB_STATES, "paused"];
  const rows: string[][] = [header];
  for (const queue of queues) {
    const counts = await queueCounts(queue);
    rows.push([queue.name, ...JOB_STATES.map((s) => String(counts[s] ?? 0)), (await queue.isPaused()) ? "yes" : "no"]);
  }
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const row of rows) {
    deps.out(
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join("  ")
        .trimEnd(),
    );
  }
}

async function listIds(deps: QueuesCliDeps, queue: Queue, state: string | undefined): Promise<void> {
  if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) {
    throw new QueuesCliError(`STATE must be one of ${JOB_STATES.join(", ")}`);
  }
  const counts = await queueCounts(queue);
  for (const s of state === undefined ? JOB_STATES : [state as (typeof JOB_STATES)[number]]) {
    const total = counts[s] ?? 0;
    if (total === 0 && state === undefined) continue;
    const jobs = await queue.getJobs([s], 0, LIST_IDS_PER_STATE - 1);
    const more = total > jobs.length ? ` (${jobs.length} of ${total} shown)` : "";
    deps.out(`${queue.name} ${s}: ${total}${more}`);
    for (const job of jobs) {
      if (job?.id) deps.out(`  ${job.id}`);
    }
  }
}

async function findJob(queues: ReadonlyMap<string, Queue>, id: string | undefined): Promise<Job> {
  if (!id) {
    throw new QueuesCliError(`a job id is required\n${USAGE}`);
  }
  for (const queue of queues.values()) {
    const job = await queue.getJob(id);
    if (job) {
      return job;
    }
  }
  throw new QueuesCliError(`no job ${JSON.stringify(id)} in ${[...queues.keys()].join(", ")}`);
}

async function show(deps: QueuesCliDeps, job: Job): Promise<void> {
  const { config, redis } = deps;
  const redactor = createRedactor([config.adminToken, config.mnemonic]);
  const chainId = chainIdOfTxQueue(job.queueName) as number;
  const record = job.id ? await readTxRecord(redis, config.redisPrefix, chainId, job.id) : undefined;
  const view = {
    id: job.id,
    queue: job.queueName,
    name: job.name,
    state: await job.getState(),
    attempts: { made: job.attemptsMade, max: job.opts.attempts ?? 1 },
    lastError: job.failedReason || record?.lastError?.message || null,
    createdAt: iso(job.timestamp),
    processedAt: iso(job.processedOn),
    finishedAt: iso(job.finishedOn),
    result: job.returnvalue ?? null,
    data: job.data,
    transactions: record ? transactionsOf(record) : [],
    transfer: await transferSidesOf(redis, config.redisPrefix, job),
  };
  deps.out(JSON.stringify(redactor.value(view), null, 2));
}

function transactionsOf(record: TxRecordView): Array<Record<string, unknown>> {
  return record.attempts.map((a) => ({
    nonce: a.nonce,
    hash: a.hash,
    fee: a.fee,
    sentAt: iso(a.sentAtMs),
    status:
      record.result?.transactionHash === a.hash ? record.status : a.nonce === record.nonce ? record.status : "replaced",
  }));
}

async function retry(deps: QueuesCliDeps, job: Job): Promise<void> {
  const refusal = await retryRefusal(deps.redis, deps.config.redisPrefix, job);
  if (refusal) {
    throw new QueuesCliError(`refused to retry ${job.id}: ${refusal}`);
  }
  await job.retry("failed");
  deps.out(`${job.id}: retried (back in ${job.queueName}, attempts reset)`);
}

async function retryFailed(deps: QueuesCliDeps, queue: Queue): Promise<void> {
  let retried = 0;
  let refused = 0;
  // The whole failed set first: retried jobs leave it while we walk.
  const jobs = await queue.getJobs(["failed"], 0, -1);
  for (const job of jobs) {
    const refusal = await retryRefusal(deps.redis, deps.config.redisPrefix, job);
    if (refusal) {
      refused += 1;
      deps.out(`${job.id}: not retried: ${refusal}`);
      continue;
    }
    await job.retry("failed");
    retried += 1;
    deps.out(`${job.id}: retried`);
  }
  deps.out(`${queue.name}: ${retried} retried, ${refused} refused`);
}

async function clean(
  deps: QueuesCliDeps,
  queue: Queue,
  state: string | undefined,
  age: string | undefined,
): Promise<void> {
  if (!state || !(CLEANABLE as readonly string[]).includes(state)) {
    throw new QueuesCliError(`STATE must be one of ${CLEANABLE.join(", ")}`);
  }
  const graceMs = parseAge(age);
  const removed = await queue.clean(graceMs, 0, state as (typeof CLEANABLE)[number]);
  deps.out(`${queue.name}: removed ${removed.length} ${state} job(s) older than ${age}`);
}

/** `90s`, `30m`, `12h`, `7d`, or plain milliseconds. */
export function parseAge(age: string | undefined): number {
  const match = age === undefined ? null : /^([0-9]+)(ms|s|m|h|d)?$/.exec(age);
  if (!match) {
    throw new QueuesCliError(
      `AGE must look like 90s, 30m, 12h, 7d or a number of ms (got ${JSON.stringify(age ?? "")})`,
    );
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(match[2] ?? "ms") as "ms"];
  return Number(match[1]) * unit;
}

function iso(ms: number | undefined): string | null {
  return ms ? new Date(ms).toISOString() : null;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (isHelp(args)) {
    process.stdout.write(`${USAGE}\n`);
    return args.length === 0 ? 1 : 0;
  }
  const config = loadCliConfig("queues");
  if (config === undefined) return 1;
  const redis = new Redis({ ...redisOptions(config.redis), maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  redis.on("error", () => undefined);
  try {
    await runQueuesCommand(args, { config, redis, out: (line) => process.stdout.write(`${line}\n`) });
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof QueuesCliError ? err.message : `queues: ${errorMessage(err)}`}\n`);
    return 1;
  } finally {
    redis.disconnect();
  }
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
