import { Wallet } from "ethers";
import { startPoller, type RunningPoller } from "../../services/poller/start-poller";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import { SENDER_PREPARE_BUFFER_SEC } from "../../shared/protocol/expiry";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { liveChildPids } from "../harness/child-process";
import {
  AMOUNT,
  RECEIVING,
  SENDING,
  routerConfigJson,
  startE2eStack,
  stopE2eStack,
  type E2eStack,
} from "../e2e/e2e-fixture";
import {
  latestTimestamp,
  senderOf,
  tokenBalance,
  transferEvents,
  userPrepare,
  waitForEvent,
  type PrepareParams,
  type UserTransfer,
} from "../e2e/e2e-user";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * "Refunds wait 13 minutes": a user prepares on the sending chain with a bid the poller itself
 * declines (signed by another key, expired, or for more than the user locked). The router will never prepare
 * the receiving side, so the user's funds are refunded at once through the router's cancel-sender, like every
 * refund of the router's own refusal, not after the 780 s buffer. The pollers and submitters run in this
 * process at their shipped defaults (1 s poll, 3 s head refresh); no chain time is added.
 */

/** Far under the 780 s buffer: a few poller and submitter rounds at the shipped intervals, on a loaded CI host. */
const REFUND_BOUND_MS = 90_000;

describe("adversarial: a sending prepare the poller declines is refunded at once (anvil 1337 → 1338, redis)", () => {
  let s: E2eStack;
  const running: Array<RunningPoller | RunningSubmitter> = [];

  beforeAll(async () => {
    s = await startE2eStack();
  }, 120_000);

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });

  afterAll(async () => {
    await stopE2eStack(s);
    expect(liveChildPids()).toEqual([]);
  });

  const startRouterAtDefaults = async (): Promise<ReturnType<typeof captureLogs>> => {
    const prefix = uniquePrefix();
    const config = loadConfig(routerConfigJson(s, prefix, {}), {}).config;
    const logs = captureLogs();
    for (const chainId of [SENDING, RECEIVING]) {
      running.push(await startSubmitter({ config, logger: logs.logger, chainId }));
    }
    for (const chain of [s.sending, s.receiving]) {
      const startBlock = (await chain.provider.getBlockNumber()) + 1;
      running.push(await startPoller({ config, logger: logs.logger, chainId: chain.chainId, options: { startBlock } }));
    }
    return logs;
  };

  it.each<[string, (nowSec: number) => PrepareParams, string]>([
    [
      "a bid signed by another key",
      () => ({ bidSigner: createMnemonicSigner(Wallet.createRandom().mnemonic?.phrase ?? "") }),
      "bid-signer-mismatch",
    ],
    ["an expired bid", (nowSec) => ({ bid: { bidExpiry: nowSec - 1 } }), "bid-expired"],
    [
      "less than the bid beyond tolerance",
      () => ({ tamper: { amount: (AMOUNT * 80n) / 100n } }),
      "amount-outside-tolerance",
    ],
  ])(
    "%s: the router's cancel-sender refunds the user within 90 s, with the receiving side never prepared",
    async (_what, params, reason) => {
      const logs = await startRouterAtDefaults();
      const t: UserTransfer = await userPrepare(s, params(await latestTimestamp(s.sending)));
      const preparedAtSec = await latestTimestamp(s.sending);
      const startedAtMs = Date.now();

      const cancelled = await waitForEvent(s.sending, "cancelled", t.transactionId, REFUND_BOUND_MS);
      const tookMs = Date.now() - startedAtMs;
      const cancelBlock = await s.sending.provider.getBlock(cancelled.blockNumber);
      console.log(`${reason}: refunded ${tookMs} ms after the prepare was mined`);

      // The refund is the router's cancel, and it came well inside the buffer.
      expect(await senderOf(s.sending, cancelled)).toBe(s.router);
      expect((cancelBlock?.timestamp ?? Infinity) - preparedAtSec).toBeLessThan(SENDER_PREPARE_BUFFER_SEC);
      expect(await tokenBalance(s.sending, t.fallback, t.txData.sendingAssetId)).toBe(BigInt(t.txData.amount));
      expect(await transferEvents(s.receiving, "prepared", t.transactionId)).toEqual([]);
      const enqueued = logs.lines().filter((l) => l.at === "poller.enqueue" && l.transferKey === t.key);
      expect(enqueued.map((l) => [l.action, l.reason])).toEqual([["cancel-sender", reason]]);
    },
    REFUND_BOUND_MS + 30_000,
  );
});
