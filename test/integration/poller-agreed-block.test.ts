import type { ChainProvider } from "../../shared/chain/chain-provider";
import { variantVerdict } from "../../shared/protocol/variant-verdict";
import { completedVariantDigest, variantDigest } from "../../shared/protocol/digests";
import type { TransferRecord } from "../../shared/protocol/types";
import { agreedBlock } from "../../services/poller/sources/agreed-block";
import { probeCursor } from "../../services/poller/sources/cursor-probe";
import { parseCursor, type StoredCursor } from "../../services/poller/sources/log-cursor";
import { captureLogs } from "../harness/logs";

/** Pure parts of the poller's recovery: block agreement between providers, the cursor format, the variant verdict. */

/** A ChainProvider whose providers report these hashes per block (undefined: the block is not there yet). */
function providersWith(views: ReadonlyArray<Readonly<Record<number, string | undefined>>>): ChainProvider {
  return {
    readEach: async (fn: (rpc: unknown) => Promise<unknown>) =>
      Promise.all(
        views.map(async (view, i) => ({
          label: `p${i}`,
          value: await fn({
            getBlock: async (block: number) => (view[block] === undefined ? null : { hash: view[block] }),
          }),
        })),
      ),
  } as unknown as ChainProvider;
}

describe("agreedBlock", () => {
  const logger = captureLogs().logger;

  it("takes the target when every provider reports the same hash", async () => {
    await expect(
      agreedBlock(providersWith([{ 10: "0xa" }, { 10: "0xa" }]), { from: 5, target: 10, logger }),
    ).resolves.toEqual({ block: 10, hash: "0xa" });
  });

  it("steps back below a block the providers disagree on", async () => {
    const views = [
      { 10: "0xa", 9: "0xb", 8: "0xc" },
      { 10: "0xz", 9: "0xy", 8: "0xc" },
    ];
    await expect(agreedBlock(providersWith(views), { from: 5, target: 10, logger })).resolves.toEqual({
      block: 8,
      hash: "0xc",
    });
  });

  it("reads nothing when they disagree down to the range start, or no provider has the block", async () => {
    await expect(
      agreedBlock(
        providersWith([
          { 10: "0xa", 9: "0xb" },
          { 10: "0xz", 9: "0xy" },
        ]),
        { from: 9, target: 10, logger },
      ),
    ).resolves.toBeUndefined();
    await expect(agreedBlock(providersWith([{}, {}]), { from: 9, target: 10, logger })).resolves.toBeUndefined();
  });

  it("with one provider (or one that has the block), takes its view", async () => {
    await expect(agreedBlock(providersWith([{ 10: "0xa" }, {}]), { from: 5, target: 10, logger })).resolves.toEqual({
      block: 10,
      hash: "0xa",
    });
  });
});

describe("parseCursor", () => {
  it("reads the JSON form, and refuses anything else naming it", () => {
    expect(() => parseCursor("42")).toThrow("stored log cursor is not a cursor object with a block number: 42");
    expect(() => parseCursor("null")).toThrow("not a cursor object");
    expect(parseCursor('{"block":7,"hash":"0xh","checkpoints":[{"block":7,"hash":"0xh"}],"updatedAtMs":5}')).toEqual({
      block: 7,
      hash: "0xh",
      checkpoints: [{ block: 7, hash: "0xh" }],
      updatedAtMs: 5,
    });
    expect(parseCursor('{"block":7,"hash":"0xh","checkpoints":[],"updatedAtMs":5,"genesisHash":"0xg"}')).toMatchObject({
      genesisHash: "0xg",
    });
    expect(parseCursor(null)).toBeUndefined();
  });
});

describe("probeCursor: a cursor ahead of the head moves only once its hash is confirmed missing", () => {
  const cursor = (genesisHash?: string): StoredCursor => ({
    block: 100,
    hash: "0xc100",
    checkpoints: [
      { block: 100, hash: "0xc100" },
      { block: 90, hash: "0xc90" },
      { block: 80, hash: "0xc80" },
    ],
    updatedAtMs: 1,
    ...(genesisHash === undefined ? {} : { genesisHash }),
  });

  it("waits for a provider that still serves the cursor's block, or has only older checkpoints, all ours", async () => {
    await expect(probeCursor(providersWith([{ 100: "0xc100" }]), cursor())).resolves.toMatchObject({ kind: "lagging" });
    await expect(probeCursor(providersWith([{ 80: "0xc80" }]), cursor())).resolves.toMatchObject({ kind: "lagging" });
    // One provider on another branch does not outvote one that has our block.
    await expect(probeCursor(providersWith([{ 100: "0xother" }, { 100: "0xc100" }]), cursor())).resolves.toMatchObject({
      kind: "lagging",
    });
  });

  it("waits when no provider has any checkpoint's height and the genesis is the same, or unknown", async () => {
    await expect(probeCursor(providersWith([{ 0: "0xg" }]), cursor("0xg"))).resolves.toMatchObject({
      kind: "lagging",
    });
    await expect(probeCursor(providersWith([{ 0: "0xg" }]), cursor())).resolves.toMatchObject({ kind: "lagging" });
  });

  it("waits while the providers that have a height disagree on it", async () => {
    await expect(
      probeCursor(
        providersWith([
          { 90: "0xa", 0: "0xg" },
          { 90: "0xb", 0: "0xg" },
        ]),
        cursor("0xg"),
      ),
    ).resolves.toMatchObject({ kind: "lagging" });
  });

  it("rewinds to the newest checkpoint still on chain below one the providers agree is replaced", async () => {
    const views = [
      { 90: "0xnew", 80: "0xc80" },
      { 90: "0xnew", 80: "0xc80" },
    ];
    await expect(probeCursor(providersWith(views), cursor())).resolves.toMatchObject({
      kind: "replaced",
      onChain: { block: 80, hash: "0xc80" },
    });
  });

  it("resets when a checkpoint is replaced and none is on chain, or the genesis differs", async () => {
    await expect(probeCursor(providersWith([{ 80: "0xnew" }]), cursor())).resolves.toEqual({
      kind: "replaced",
      evidence: expect.any(String),
    });
    await expect(probeCursor(providersWith([{ 0: "0xnewgenesis" }]), cursor("0xg"))).resolves.toEqual({
      kind: "replaced",
      evidence: expect.any(String),
    });
  });
});

describe("variantVerdict", () => {
  const txData = { amount: "100", expiry: 1_000, preparedBlockNumber: 12 } as TransferRecord["txData"];
  const record = (status: TransferRecord["status"]): TransferRecord =>
    ({ status, chainId: 1, txData }) as TransferRecord;
  const zero = `0x${"0".repeat(64)}`;

  it.each([
    ["no record, nothing on chain", undefined, zero, "agrees"],
    ["no record, a side on chain", undefined, variantDigest(txData), "store-behind"],
    ["Prepared, same prepare", "Prepared", variantDigest(txData), "agrees"],
    ["Prepared, completed on chain (missed fulfill)", "Prepared", completedVariantDigest("100", 1_000), "store-behind"],
    ["Prepared, nothing on chain (re-org, reset)", "Prepared", zero, "store-ahead"],
    ["Prepared, other amounts", "Prepared", variantDigest({ ...txData, amount: "99" }), "store-ahead"],
    ["Fulfilled, completed", "Fulfilled", completedVariantDigest("100", 1_000), "agrees"],
    ["Fulfilled, still prepared on chain", "Fulfilled", variantDigest(txData), "store-ahead"],
  ] as const)("%s", (_what, status, actual, verdict) => {
    expect(variantVerdict(status === undefined ? undefined : record(status), actual)).toBe(verdict);
  });
});
