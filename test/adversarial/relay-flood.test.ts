import { routerMetrics } from "../../shared/metrics/router-metrics";
import { REQUEST_BOUNDS } from "../../services/auction/start-auction";
import { waitFor } from "../harness/wait";
import { startRelayBed, type RelayBed, type RelayReply } from "./relay-fixture";

/**
 * A requester with nothing at stake floods the auction's metatx topic: the work it causes is bounded (at most
 * REQUEST_BOUNDS.metatx requests handled at once, the rest answered RELAY_BUSY at once) and so are the log lines
 * it writes (one per outcome and code a minute), while metrics count every request. The bound is the shipped one.
 * The auction's fee cache is kept cold (prices older than 1 ms are stale) so that a genuine request for a
 * transfer the router carries is held for the whole retry window (60 s): the longest a request can hold a slot.
 */
describe("relay flood: bounded work and bounded log lines per request", () => {
  let bed: RelayBed;

  beforeAll(async () => {
    bed = await startRelayBed({ priceMaxAgeMs: 1 });
  }, 180_000);

  afterAll(async () => {
    await bed?.stop();
  });

  const metatxCount = async (outcome: string, reason: string): Promise<number> =>
    (await routerMetrics().metatxRequests.get()).values.find(
      (v) => v.labels.outcome === outcome && v.labels.reason === reason,
    )?.value ?? 0;

  it("500 malformed requests: each answered, counted in metrics, and logged once", async () => {
    const replies = await Promise.all(
      Array.from({ length: 500 }, () => bed.ask({ type: "Fulfill", to: 7, chainId: "x", data: [] })),
    );
    const refused = replies.filter((r) => r.error?.type === "InvalidMetaTxPayloadError").length;
    const busy = replies.filter((r) => r.error?.type === "RelayBusyError").length;
    expect(refused + busy).toBe(500);
    expect(refused).toBeGreaterThan(0);
    expect(await metatxCount("refused", "INVALID_METATX_PAYLOAD")).toBe(refused);
    const lines = bed.auctionLogs
      .lines()
      .filter((l) => l.at === "auction.metatx" && l.code === "INVALID_METATX_PAYLOAD");
    expect(lines).toHaveLength(1);
  }, 120_000);

  it(`a flood of genuine requests held by the router: ${REQUEST_BOUNDS.metatx} handled at once, the rest answered RELAY_BUSY at once`, async () => {
    const [, receiver] = await bed.preparedTransfer();
    const request = await bed.sdkRequest(receiver, 10n ** 18n);
    const flood = REQUEST_BOUNDS.metatx + 36;
    const busyBefore = await metatxCount("busy", "RELAY_BUSY");
    const answered: RelayReply[] = [];
    const asked = Array.from({ length: flood }, () => bed.ask(request).then((r) => answered.push(r)));
    await waitFor("the shed requests answered", async () => (answered.length >= 36 ? true : undefined), 30_000);
    expect(answered.filter((r) => r.error?.type !== "RelayBusyError")).toEqual([]);
    // The requests in flight hold their slots (the cold fee cache is retried for 60 s): no slot is freed, none
    // more is shed, and every later request is refused at once.
    const late = await bed.ask(request);
    expect(late.error).toMatchObject({ type: "RelayBusyError", context: { code: "RELAY_BUSY", retriable: true } });
    expect(answered).toHaveLength(36);
    // The bound is per topic: a status request is still answered (a wide margin: answered, not how fast).
    expect(await bed.askStatus(10_000)).toMatchObject({ signerAddress: expect.any(String) });
    expect(await metatxCount("busy", "RELAY_BUSY")).toBe(busyBefore + 37);
    // One line for every shed request of this file (both floods), within the minute's window.
    const busyLines = bed.auctionLogs.lines().filter((l) => l.at === "auction.metatx" && l.outcome === "busy");
    expect(busyLines).toHaveLength(1);
    void asked;
  }, 120_000);
});
