import { txRecordKey } from "../../shared/coordination/keys";
import { RECEIVING } from "../e2e/e2e-fixture";
import { transferEvents, waitForEvent } from "../e2e/e2e-user";
import { waitFor } from "../harness/wait";
import { startRelayBed, type RelayBed, type RelayReply } from "./relay-fixture";

/** A relay that failed for a reason the chain did not give can be asked again (docs/relaying.md). */
describe("relay retry: one transient failure does not end relaying for a transfer", () => {
  let bed: RelayBed;

  beforeAll(async () => {
    bed = await startRelayBed();
  }, 180_000);

  afterAll(async () => {
    await bed?.stop();
  });

  /** Asks while every estimate fails, and lets the relay job spend its attempts (the shipped 8). */
  const failDuringOutage = async (request: Record<string, unknown>, jobId: string): Promise<RelayReply> => {
    bed.rpc.fail("eth_estimateGas", true);
    try {
      const asked = bed.ask(request);
      // The backoff waits between attempts are skipped by promoting the delayed job: how long the outage lasts
      // does not matter here, only that the attempts run out.
      await waitFor(
        "relay job failed",
        async () => {
          const job = await bed.queue.getJob(jobId);
          const state = await job?.getState();
          if (state === "delayed") await job?.promote().catch(() => undefined);
          return state === "failed" ? true : undefined;
        },
        60_000,
      );
      expect((await bed.queue.getJob(jobId))?.attemptsMade).toBe(8);
      return await asked;
    } finally {
      bed.rpc.fail("eth_estimateGas", false);
    }
  };

  it("a relay that failed for a transient reason (every estimate failing in an RPC outage) is relayed when asked again", async () => {
    const { s } = bed;
    const [transfer, receiver] = await bed.preparedTransfer();
    const request = await bed.sdkRequest(receiver, (await bed.expectedFee(receiver)) * 2n);
    const jobId = bed.relayJobId(transfer);
    const first = await failDuringOutage(request, jobId);
    expect(first.error?.type).toBe("RelayFailedError");
    expect(await transferEvents(s.receiving, "fulfilled", transfer.transactionId)).toHaveLength(0);

    // The outage is over: asking again relays it.
    const again = await bed.ask(request);
    expect(again.error).toBeNull();
    expect(again.data).toEqual({ transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), chainId: RECEIVING });
    const fulfilled = await waitForEvent(s.receiving, "fulfilled", transfer.transactionId, 30_000);
    expect(fulfilled.transactionHash).toBe(again.data?.transactionHash);
  }, 150_000);

  it("a relay job that failed with a transaction signed for it (reverted, or possibly still mined) stays the answer: nothing is sent again", async () => {
    const { s } = bed;
    const [transfer, receiver] = await bed.preparedTransfer();
    const request = await bed.sdkRequest(receiver, (await bed.expectedFee(receiver)) * 2n);
    const jobId = bed.relayJobId(transfer);
    await failDuringOutage(request, jobId);
    // As if its transaction had been signed and had reverted: the record the send pipeline writes first.
    await bed.r.redis.hset(
      txRecordKey(bed.r.prefix, RECEIVING, jobId),
      "record",
      JSON.stringify({ status: "reverted" }),
    );
    const before = await bed.signerState();

    const again = await bed.ask(request);

    expect(again.error?.type).toBe("RelayFailedError");
    expect(await bed.queue.getJob(jobId).then((job) => job?.getState())).toBe("failed");
    expect(await bed.signerState()).toEqual(before);
    expect(await transferEvents(s.receiving, "fulfilled", transfer.transactionId)).toHaveLength(0);
  }, 150_000);
});
