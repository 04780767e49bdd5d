import { invariantDigest, invariantOf } from "../../shared/protocol/digests";
import { waitFor } from "../harness/wait";
import { SENDING, startE2eStack, startRouter, stopE2eStack, type E2eStack, type Router } from "../e2e/e2e-fixture";
import { isCompleted, userFulfill, userPrepare, waitForEvent } from "../e2e/e2e-user";

jest.setTimeout(180_000);

/**
 * The TransactionManager keys a transfer by the digest of its invariant data, not by its transaction id: the same
 * user may prepare a second sending transfer under the same `transactionId` with another invariant (here another
 * `sendingChainFallback`) and lock 1 wei in it. The user's fulfill signature covers only the transaction id,
 * the relayer fee and the receiving chain, so it claims either transfer. The router must claim the sending side
 * it verified and answered with its receiving prepare, never the 1-wei one that came after it. Real contracts,
 * the router's pollers and submitters at their shipped defaults.
 */
describe("adversarial: two sending transfers under one transaction id", () => {
  let s: E2eStack;
  let r: Router | undefined;

  beforeAll(async () => {
    s = await startE2eStack();
  }, 120_000);

  afterAll(async () => {
    await r?.stop();
    await stopE2eStack(s);
  });

  it("the router claims the transfer it prepared for, not a 1-wei one prepared later under the same id", async () => {
    r = await startRouter(s, { admin: false });
    const honest = await userPrepare(s);
    const receiver = (await waitForEvent(s.receiving, "prepared", honest.transactionId, 60_000)).txData;
    expect(invariantDigest(invariantOf(receiver))).toBe(invariantDigest(invariantOf(honest.txData)));

    // The same user, the same id, the same bid: another fallback makes another invariant, so the contract takes it.
    const decoy = await userPrepare(s, { transactionId: honest.transactionId, tamper: { amount: 1n } });
    expect(invariantDigest(invariantOf(decoy.txData))).not.toBe(invariantDigest(invariantOf(honest.txData)));
    const router = r;
    await waitFor("the sending poller past the decoy", async () =>
      ((await router.getHead(SENDING))?.syncedBlock ?? -1) >= decoy.blockNumber ? true : undefined,
    );

    await userFulfill(s, receiver);
    await waitFor(
      "a claim on the sending chain",
      async () =>
        (await isCompleted(s.sending, honest.txData)) || (await isCompleted(s.sending, decoy.txData))
          ? true
          : undefined,
      60_000,
    );
    expect({
      honestClaimed: await isCompleted(s.sending, honest.txData),
      decoyClaimed: await isCompleted(s.sending, decoy.txData),
    }).toEqual({ honestClaimed: true, decoyClaimed: false });
  });
});
