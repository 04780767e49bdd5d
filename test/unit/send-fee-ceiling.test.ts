import { submitWithFreshNonce } from "../../services/submitter/send/attempts";
import { bumpOrRebroadcast } from "../../services/submitter/send/bump";
import type { SendContext, SendJob } from "../../services/submitter/send/send-context";
import { newTxRecord, type TxCall, type TxRecord } from "../../services/submitter/send/tx-record";
import { createLogger } from "../../shared/logging/create-logger";
import { feeFromJson, feeCap, type Fee } from "../../shared/protocol/gas";

/**
 * A call's own fee ceiling (TxCall.maxFeePerGas, set by relays: what the user's fee pays for) holds for the first
 * fee and every bump, whatever the network asks; the chain's gasPriceMaximum holds for calls without one. The send
 * pipeline runs for real; only its Redis store, signer and node are in-process fakes.
 */
const GWEI = 10n ** 9n;

function sendContext(network: Fee): { ctx: SendContext; broadcasts: string[] } {
  const broadcasts: string[] = [];
  let signed = 0;
  const ctx = {
    chain: { chainId: 1338, gasPriceMaximum: (1_000n * GWEI).toString(), maxGasBumps: 10, gasBumpPercent: 20 },
    chainId: 1338,
    from: "0x0000000000000000000000000000000000000001",
    provider: {
      broadcast: async (raw: string) => {
        broadcasts.push(raw);
        return { acceptedBy: ["fake"], alreadyKnownBy: [] };
      },
    },
    signer: { signTransaction: async () => `0x${(signed++).toString(16).padStart(4, "0")}` },
    records: { save: async (record: TxRecord) => ({ ...record, version: record.version + 1 }) },
    nonces: {
      allocate: async () => ({ nonce: 7, stored: 7, pending: 7 }),
      reserve: () => undefined,
      advanceTo: async () => undefined,
    },
    gasPrice: async () => network,
    logger: createLogger({ level: "silent", service: "test" }),
    pollIntervalMs: 10,
    signal: new AbortController().signal,
  } as unknown as SendContext;
  return { ctx, broadcasts };
}

const job: SendJob = {
  jobId: "relay-fulfill-x",
  jobName: "relay-fulfill",
  dataHash: "h",
  trace: {},
  reportBroadcast: async () => undefined,
};

function record(call: TxCall): TxRecord {
  return newTxRecord({ jobId: job.jobId, jobName: job.jobName, chainId: 1338, from: "0x1", dataHash: "h", call });
}

const call: TxCall = { to: "0x2", data: "0x", value: "0", gasLimit: "100000" };
const lastFee = (r: TxRecord): bigint => feeCap(feeFromJson(r.attempts[r.attempts.length - 1].fee));

describe("a call's own fee ceiling (relays)", () => {
  it("caps the first fee at the call's ceiling, then stops bumping there and only rebroadcasts", async () => {
    const { ctx, broadcasts } = sendContext({ type: 2, maxFeePerGas: 50n * GWEI, maxPriorityFeePerGas: 2n * GWEI });
    let sent = await submitWithFreshNonce(ctx, job, record({ ...call, maxFeePerGas: (12n * GWEI).toString() }));
    expect(lastFee(sent)).toBe(12n * GWEI);
    sent = await bumpOrRebroadcast(ctx, job, sent);
    expect(sent.attempts).toHaveLength(1);
    expect(broadcasts).toHaveLength(2); // the same transaction again, no higher fee

    const { ctx: low } = sendContext({ type: 2, maxFeePerGas: 10n * GWEI, maxPriorityFeePerGas: 1n * GWEI });
    let bumped = await submitWithFreshNonce(low, job, record({ ...call, maxFeePerGas: (11n * GWEI).toString() }));
    expect(lastFee(bumped)).toBe(10n * GWEI);
    bumped = await bumpOrRebroadcast(low, job, bumped);
    expect(lastFee(bumped)).toBe(11n * GWEI); // a 20 % bump would be 12 gwei
  });

  it("a call without a ceiling of its own bumps as before, up to the chain's gasPriceMaximum", async () => {
    const { ctx } = sendContext({ type: 2, maxFeePerGas: 50n * GWEI, maxPriorityFeePerGas: 2n * GWEI });
    let sent = await submitWithFreshNonce(ctx, job, record(call));
    expect(lastFee(sent)).toBe(50n * GWEI);
    sent = await bumpOrRebroadcast(ctx, job, sent);
    expect(lastFee(sent)).toBe(60n * GWEI);
  });
});
