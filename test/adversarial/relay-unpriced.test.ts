import { TX_JOB } from "../../shared/queues";
import { waitFor } from "../harness/wait";
import { RECEIVING } from "../e2e/e2e-fixture";
import { startRelayBed, type RelayBed } from "./relay-fixture";

jest.setTimeout(180_000);

/**
 * A relayer fee on a chain with no price oracle is priced at 0: any offer passes the fee check, yet the relay's
 * gas is the router's. At the shipped default (`allowUnpricedRelay` off) neither the auction nor the submitter
 * spends gas on it: the auction refuses the request, and a job that reaches the queue another way is failed
 * before anything is signed.
 */
describe("adversarial: relays the fee cannot pay for because it cannot be priced", () => {
  let bed: RelayBed;

  beforeAll(async () => {
    bed = await startRelayBed({}, { priced: false });
  });

  afterAll(async () => {
    await bed?.stop();
  });

  it("a relay on a chain with no price oracle is refused by the auction and by the submitter, with nothing signed", async () => {
    const [transfer, receiver] = await bed.preparedTransfer();
    const before = await bed.signerState();

    const reply = await bed.ask(await bed.sdkRequest(receiver, 0n));
    expect(reply.data).toBeNull();
    expect(reply.error).toMatchObject({ type: "RelayUnpricedError", context: { code: "RELAY_UNPRICED" } });
    expect(await bed.queue.getJob(bed.relayJobId(transfer))).toBeUndefined();

    // The same relay enqueued past the auction (another instance with an older config, a dashboard add): the
    // submitter prices it itself and fails it for good before signing.
    const request = (await bed.sdkRequest(receiver, 0n)) as {
      data: { relayerFee: string; signature: string; callData: string };
    };
    const jobId = bed.relayJobId(transfer);
    await bed.queue.add(
      TX_JOB.relayFulfill,
      {
        chainId: RECEIVING,
        txData: receiver,
        relayerFee: request.data.relayerFee,
        signature: request.data.signature,
        callData: request.data.callData,
        requestId: "relay-unpriced-test",
      },
      { jobId, attempts: 1 },
    );
    // Read the job again once failed: a job read while still active carries no failedReason.
    await waitFor("the relay job to fail", async () => (await bed.queue.getJob(jobId))?.isFailed());
    expect((await bed.queue.getJob(jobId))?.failedReason).toContain("RELAY_UNPRICED");
    expect(await bed.signerState()).toEqual(before);
  });
});
