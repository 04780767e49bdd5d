import { loadConfig } from "../../shared/config";
import { chainHeadKey, pollerCursorKey, transferRecordKey } from "../../shared/coordination/keys";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";
import {
  RECEIVING,
  pollerConfigJson,
  routerPrepareReceiver,
  startTestPoller,
  syncedPast,
  usePollerSuite,
  userFulfill,
  userPrepare,
} from "../integration/poller-fixture";
import { waitFor } from "../harness/wait";

/**
 * "One lagging provider looks like a chain reset": a receiving chain whose only provider (a
 * load-balanced endpoint, one backend far behind) answers a head more than 5 blocks behind the stored cursor.
 * Before, that counted as a chain reset: the poller read the chain again from its start block (up to 100 000
 * blocks) and re-created closed records that retention had already dropped. The poller must wait for the
 * provider instead, and read on from its cursor once the provider catches up. Pollers at their shipped
 * intervals (1 s poll, 3 s head refresh, 10 s idle tick).
 */

const USER = 5;
const LAG_BLOCKS = 12; // more than CURSOR_AHEAD_SLACK_BLOCKS (5) behind the cursor

interface StoredHead {
  readonly blockNumber: number;
  readonly updatedAtMs: number;
}

describe("adversarial: one lagging provider is not a chain reset (anvil 1337 → 1338, redis, RPC proxy)", () => {
  const s = usePollerSuite("lagging-provider");
  let proxy: RpcProxy | undefined;

  afterEach(async () => {
    await proxy?.down();
    proxy = undefined;
  });

  const cursorBlock = async (): Promise<number> =>
    (JSON.parse((await s.queues.redis.get(pollerCursorKey(s.prefix, RECEIVING))) ?? "null") as { block: number }).block;
  const storedHead = async (): Promise<StoredHead | undefined> => {
    const json = await s.queues.redis.get(chainHeadKey(s.prefix, RECEIVING));
    return json === null ? undefined : (JSON.parse(json) as StoredHead);
  };

  it.each([
    ["whose node still serves the newer blocks by number", false],
    ["that has not synced the newer blocks at all", true],
  ])(
    "a provider %s, lagging behind the cursor: no re-read, no re-created closed record; read on once it catches up",
    async (_what, hideNewer) => {
      proxy = await startRpcProxy(s.receiving.anvil.url);
      const raw = pollerConfigJson(s, s.prefix);
      const chains = raw.chainConfig as Record<string, Record<string, unknown>>;
      chains[String(RECEIVING)] = { ...chains[String(RECEIVING)], providers: [proxy.url] };
      const config = loadConfig(raw, {}).config;
      const defaults = { intervalMs: undefined, providerOptions: undefined }; // the shipped intervals, not FAST
      for (const chain of [s.sending, s.receiving]) {
        const startBlock = (await chain.provider.getBlockNumber()) + 1;
        await startTestPoller(s, { config, chainId: chain.chainId, options: { ...defaults, startBlock } });
      }

      // A transfer whose receiving side closed (fulfilled), then dropped from the store as retention does days later.
      const prepared = await userPrepare(s, { user: USER });
      const fulfilled = await userFulfill(s, prepared, await routerPrepareReceiver(s, prepared));
      await syncedPast(s.queues, s.prefix, RECEIVING, fulfilled.receipt.blockNumber);
      const store = createTransferStore(s.queues.redis, s.prefix);
      expect((await store.get(RECEIVING, prepared.transactionId, prepared.invariant.user))?.status).toBe("Fulfilled");
      const recordKey = transferRecordKey(s.prefix, RECEIVING, prepared.transferKey);
      expect(await s.queues.redis.del(recordKey)).toBe(1);

      // The chain moves on and the poller with it; then its provider falls behind the cursor.
      await s.receiving.anvil.mine(2 * LAG_BLOCKS);
      await syncedPast(s.queues, s.prefix, RECEIVING, await s.receiving.provider.getBlockNumber());
      const cursorBefore = await cursorBlock();
      await proxy.lagBehind(LAG_BLOCKS, { hideNewer });
      const laggingHead = (await s.receiving.provider.getBlockNumber()) - LAG_BLOCKS;
      expect(cursorBefore - laggingHead).toBeGreaterThan(5);

      // Two whole ticks on the lagging head (the sending poller's new heads wake the receiving one).
      for (let tick = 0; tick < 2; tick += 1) {
        const sinceMs = (await storedHead())?.updatedAtMs ?? 0;
        await s.sending.anvil.mine(1);
        await waitFor("a receiving tick on the lagging head", async () => {
          const head = await storedHead();
          return head !== undefined && head.blockNumber === laggingHead && head.updatedAtMs > sinceMs
            ? true
            : undefined;
        });
      }
      expect(await cursorBlock()).toBe(cursorBefore);
      expect(await s.queues.redis.exists(recordKey)).toBe(0);
      const logs = s.logs.lines().filter((l) => l.at === "poller.logs" && l.chainId === RECEIVING);
      expect(logs.filter((l) => l.level === "error")).toEqual([]);
      expect(logs.filter((l) => String(l.message).startsWith("stored log cursor is ahead"))).toEqual([
        expect.objectContaining({ level: "warn", storedCursor: cursorBefore, head: laggingHead }),
      ]);

      // Caught up: read on from the cursor, nothing before it again.
      proxy.catchUp();
      await s.receiving.anvil.mine(1);
      await syncedPast(s.queues, s.prefix, RECEIVING, await s.receiving.provider.getBlockNumber());
      expect(await cursorBlock()).toBeGreaterThan(cursorBefore);
      expect(await s.queues.redis.exists(recordKey)).toBe(0);
    },
    120_000,
  );
});
