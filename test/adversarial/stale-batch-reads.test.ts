import type { RouterConfig } from "../../shared/config/types";
import { MAX_CANCEL_READ_AGE_MS } from "../../shared/protocol/decision-reads";
import { TX_JOB } from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { waitFor } from "../harness/wait";
import { startRpcProxy } from "../harness/rpc-proxy";
import {
  SENDING,
  pollerConfig,
  startTestPoller,
  usePollerSuite,
  userPrepare,
  type UserPrepared,
} from "../integration/poller-fixture";

/**
 * "Batched reconcile decides on old reads": a due reconcile reads a batch of open transfers at once and
 * decides them one by one, so a cancel late in the batch was judged on reads taken before every earlier decision
 * of the batch. A cancel must read both sides again when its batch's reads are older than
 * MAX_CANCEL_READ_AGE_MS (1 s) at its decision. Here the sending chain's RPC answers each variant read (eth_call)
 * after 1.1 s, so the batch's reads are past the bound before the first decision: each refund (a sending prepare
 * the poller declines, cancelled at once) must come after a read of its own. The poller runs at its shipped
 * intervals.
 */

const USER = 5;
const COUNT = 4;
const SLOW_CALL_MS = MAX_CANCEL_READ_AGE_MS + 100;

describe("adversarial: a cancel never relies on a batch read older than the bound (anvil 1337, redis, RPC proxy)", () => {
  const s = usePollerSuite("stale-batch-reads");

  it("each cancel of a batch whose reads are older than 1 s reads the sending side again before it is enqueued", async () => {
    const forger = createMnemonicSigner(ANVIL_MNEMONIC); // not the router signer: each prepare is declined
    const declined: UserPrepared[] = [];
    for (let i = 0; i < COUNT; i += 1) declined.push(await userPrepare(s, { user: USER, bidSigner: forger }));
    const proxy = await startRpcProxy(s.sending.anvil.url);
    s.afterTest(() => proxy.down());
    proxy.slow("eth_call", SLOW_CALL_MS);
    const base = pollerConfig(s, s.prefix);
    const config: RouterConfig = {
      ...base,
      chainConfig: {
        ...base.chainConfig,
        [String(SENDING)]: { ...base.chainConfig[String(SENDING)], providers: [proxy.url] },
      },
    };
    // The first tick of a process reconciles every open record in a batch (DECISION_BATCH_SIZE) before deciding.
    await startTestPoller(s, {
      config,
      chainId: SENDING,
      options: { intervalMs: undefined, providerOptions: undefined, startBlock: declined[0].receipt.blockNumber },
    });
    for (const d of declined) {
      await waitFor("the refund job", () => s.queues.job(SENDING, TX_JOB.cancelSender, d.transferKey), 30_000);
    }
    // One variant read of the sending side per record in the batch, then one more before each cancel. The count
    // also holds the balance refresh's read (one asset): without the second reads it stays at COUNT + 1.
    expect(proxy.calls("eth_call").total).toBeGreaterThanOrEqual(2 * COUNT);
    expect(s.logs.lines().filter((l) => l.at === "poller.decide" && l.level === "error")).toEqual([]);
  });
});
