import { parseUnits } from "ethers";
import { isCompleted, sendUserFulfill, transferEvents, waitForEvent } from "../e2e/e2e-user";
import { waitFor } from "../harness/wait";
import { startRelayBed, type RelayBed } from "./relay-fixture";

/**
 * What a requester can make the router spend by asking it to relay a fulfill (docs/relaying.md): never gas that
 * the user's relayer fee does not pay for, and nothing for a relay that would revert.
 */

/**
 * A contract that burns all the gas it is given, whatever the call data: runtime `5b 6000 56`
 * (JUMPDEST; PUSH1 0; JUMP: an endless loop, out of gas). Init code: PUSH4 <runtime>; PUSH1 0; MSTORE;
 * PUSH1 4; PUSH1 28; RETURN (the last 4 bytes of the stored word).
 */
const GAS_BURNER_INIT = "0x635b6000566000526004601cf3";

describe("relay spending: a relay never costs the router more than the user's fee pays for", () => {
  let bed: RelayBed;
  let burner: string;

  beforeAll(async () => {
    bed = await startRelayBed();
    const deployer = bed.s.receiving.deployer;
    const deployed = await (await deployer.sendTransaction({ data: GAS_BURNER_INIT })).wait();
    burner = deployed!.contractAddress!;
    expect(await bed.s.receiving.provider.getCode(burner)).toBe("0x5b600056");
  }, 180_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it("a fulfill whose callTo burns all its gas (call data 0x, priced at 0 extra gas) is refused before any gas is spent", async () => {
    const { s } = bed;
    const [transfer, receiver] = await bed.preparedTransfer({ callTo: burner });
    // The finding: the auction accepts a fee equal to its 200 000-gas estimate; the relay then used 3 006 924 gas.
    const fee = await bed.expectedFee(receiver);
    const before = await bed.signerState();

    const reply = await bed.ask(await bed.sdkRequest(receiver, fee));

    expect(reply.data).toBeNull();
    expect(reply.error?.type).toBe("RelayFailedError");
    expect(reply.error?.message).toMatch(/RELAY_FEE_NOT_COVERED/);
    expect(await bed.signerState()).toEqual(before);
    expect(await isCompleted(s.receiving, receiver)).toBe(false);
    expect(await transferEvents(s.receiving, "fulfilled", transfer.transactionId)).toHaveLength(0);
    const line = bed.r.logs.lines().find((l) => l.at === "submitter.job" && l.jobId === bed.relayJobId(transfer));
    expect(line).toMatchObject({ outcome: "failed", code: "RELAY_FEE_NOT_COVERED" });
  }, 120_000);

  it("a relay whose transfer the user's own fulfill completes first (waiting in the mempool) sends nothing", async () => {
    const { s } = bed;
    const [transfer, receiver] = await bed.preparedTransfer();
    const fee = (await bed.expectedFee(receiver)) * 2n;
    // Blocks stop: the user's own fulfill waits in the mempool, as when it lands between the router's checks and
    // its transaction; with its higher tip it would be mined first, and a relay sent now would revert (#F:019).
    await s.receiving.anvil.setAutomine(false);
    try {
      const userTx = await sendUserFulfill(s, receiver, {
        gasLimit: 500_000,
        maxFeePerGas: parseUnits("500", "gwei"),
        maxPriorityFeePerGas: parseUnits("100", "gwei"),
      });
      const before = await bed.signerState();

      const reply = bed.ask(await bed.sdkRequest(receiver, fee));
      // The relay job's first run is over: it sent its transaction (reported as progress), or it stopped.
      const jobId = bed.relayJobId(transfer);
      await waitFor("the relay job's first run", async () => {
        const job = await bed.queue.getJob(jobId);
        return job && (job.attemptsMade >= 1 || job.progress) ? true : undefined;
      });
      await s.receiving.anvil.mine(1);
      const fulfilled = await waitForEvent(s.receiving, "fulfilled", transfer.transactionId, 30_000);
      expect(fulfilled.transactionHash).toBe(userTx.hash);
      // The next run finds the side completed: nothing relayed, the requester told so.
      expect((await reply).error?.type).toBe("RelayFailedError");
      expect((await bed.queue.getJob(jobId))?.returnvalue).toMatchObject({ noop: true });
      // Nothing of the router's was signed: its nonce and balance are those of before the request.
      expect(await bed.signerState()).toEqual(before);
    } finally {
      await s.receiving.anvil.setAutomine(true);
    }
    expect(await transferEvents(s.receiving, "fulfilled", transfer.transactionId)).toHaveLength(1);
  }, 120_000);
});
