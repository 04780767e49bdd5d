import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { withTimeout } from "../../../shared/timing";
import type { BlockCheckpoint, StoredCursor } from "./log-cursor";

/** As agreed-block.ts: a provider that does not answer in time has no say. */
const PROBE_ANSWER_TIMEOUT_MS = 1_500;

/**
 * What the providers say about a stored cursor that is ahead of the head the tick was given:
 * - `lagging`: the chain still holds the cursor's block, or the newest checkpoint any provider has, or (no
 *   provider has any checkpoint's height) the same genesis: a provider behind us, or nothing to tell; wait;
 * - `replaced`: a stored block's hash is confirmed missing: the providers that have that height agree on another
 *   hash. `onChain` is the newest older checkpoint still on chain (rewind to it), absent when none is (or the
 *   genesis differs): the chain was reset.
 */
export type CursorProbe =
  | { readonly kind: "lagging"; readonly evidence: string }
  | { readonly kind: "replaced"; readonly onChain?: Required<BlockCheckpoint>; readonly evidence: string };

type BlockVerdict = "same" | "replaced" | "unknown";

/**
 * Probes the cursor's checkpoints newest first, then the genesis. A height no provider has yet, or one the
 * providers disagree on, proves nothing either way: one lagging or lying provider never makes a reset.
 */
export async function probeCursor(provider: ChainProvider, stored: StoredCursor): Promise<CursorProbe> {
  let replaced: BlockCheckpoint | undefined;
  for (const checkpoint of stored.checkpoints) {
    if (checkpoint.hash === undefined || checkpoint.block < 0) {
      continue;
    }
    const verdict = await blockVerdict(provider, checkpoint.block, checkpoint.hash);
    if (verdict === "same") {
      return replaced === undefined
        ? { kind: "lagging", evidence: `block ${checkpoint.block} still has the stored hash` }
        : {
            kind: "replaced",
            onChain: { block: checkpoint.block, hash: checkpoint.hash },
            evidence: `block ${replaced.block} has another hash; block ${checkpoint.block} still has the stored one`,
          };
    }
    if (verdict === "replaced") {
      replaced ??= checkpoint;
    }
  }
  if (replaced !== undefined) {
    return { kind: "replaced", evidence: `block ${replaced.block} has another hash, and no checkpoint is on chain` };
  }
  if (stored.genesisHash === undefined) {
    return { kind: "lagging", evidence: "no provider has a checkpoint's height yet, and no genesis hash is stored" };
  }
  return (await blockVerdict(provider, 0, stored.genesisHash)) === "replaced"
    ? { kind: "replaced", evidence: "the chain's genesis block has another hash" }
    : { kind: "lagging", evidence: "no provider has a checkpoint's height yet; the genesis is the same" };
}

/** `same` if any provider has `hash` at `block`; `replaced` if those with the height agree on another hash. */
async function blockVerdict(provider: ChainProvider, block: number, hash: string): Promise<BlockVerdict> {
  const answers = await provider.readEach(
    (rpc) => withTimeout(rpc.getBlock(block), PROBE_ANSWER_TIMEOUT_MS),
    "getBlock",
  );
  const hashes = answers.map((a) => a.value?.hash ?? undefined).filter((h): h is string => typeof h === "string");
  if (hashes.includes(hash)) {
    return "same";
  }
  return hashes.length > 0 && hashes.every((h) => h === hashes[0]) ? "replaced" : "unknown";
}
