import { runService } from "../../shared/process/run-service";
import { startAuction } from "./start-auction";

/** The auction process (several may run per router: they share a NATS queue group); see start-auction.ts. */
void runService({
  service: "auction",
  start: async ({ config, logger, observe }) => {
    const auction = await startAuction({
      config,
      logger,
      options: {
        // Messaging gave up for good: fail the process (uncaught → fatal → exit 1) so PM2 restarts it.
        onFatal: (err) =>
          setImmediate(() => {
            throw err instanceof Error ? err : new Error(String(err));
          }),
      },
    });
    observe?.readiness.add("messaging", () =>
      auction.messagingConnected() ? undefined : "messaging is not connected",
    );
    // Ready means able to bid: PM2 hears "ready" only once the pollers' balances and the fee caches are fresh.
    observe?.readiness.add("bidding", () => auction.biddingReady());
    return auction;
  },
});
