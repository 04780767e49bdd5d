import type { JsonRpcProvider } from "ethers";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { Logger } from "../../../shared/logging/create-logger";
import { withTimeout } from "../../../shared/timing";
import type { BlockCheckpoint } from "./log-cursor";

/** Steps back (1, 2, 4, … blocks) looking for a block the providers agree on before giving up for this tick. */
const MAX_AGREEMENT_STEPS = 6;
/**
 * readEach asks every provider, the unhealthy ones too, and waits for all: a black-holed one must not hold each
 * range for the full request timeout. A provider that does not answer in time simply has no say.
 */
const AGREEMENT_ANSWER_TIMEOUT_MS = 1_500;

/**
 * The highest block in [from, target] whose hash every answering in-sync provider reports alike, with that
 * hash; undefined when none answered or they disagree all the way down (the tick reads nothing more).
 * With one provider this is its own view of `target`: the chain's confirmations are then the only margin
 * (docs/decisions.md "Poller: which blocks count as agreed").
 */
export async function agreedBlock(
  provider: ChainProvider,
  p: {
    from: number;
    target: number;
    logger: Logger;
    /** Told of every block a provider answered with its hash: that provider's head has reached it (logs-source.ts). */
    seen?: (rpc: JsonRpcProvider, block: number, hash: string) => void;
  },
): Promise<Required<BlockCheckpoint> | undefined> {
  let block = p.target;
  for (let step = 0; step < MAX_AGREEMENT_STEPS && block >= p.from; step += 1) {
    const asked = block;
    const answers = await provider.readEach(
      (rpc) =>
        withTimeout(
          rpc.getBlock(asked).then((answer) => {
            if (typeof answer?.hash === "string") p.seen?.(rpc, asked, answer.hash);
            return answer;
          }),
          AGREEMENT_ANSWER_TIMEOUT_MS,
        ),
      "getBlock",
    );
    const hashes = answers.map((a) => a.value?.hash ?? undefined).filter((h): h is string => typeof h === "string");
    if (hashes.length === 0) {
      return undefined; // no provider has the block yet: every one is behind
    }
    if (hashes.every((h) => h === hashes[0])) {
      return { block, hash: hashes[0] };
    }
    p.logger.warn("providers disagree on a block hash; reading logs only below it", {
      at: "poller.logs",
      block,
      providers: answers.map((a) => ({ label: a.label, hash: a.value?.hash ?? null })),
    });
    block = p.target - 2 ** step;
  }
  return undefined;
}
