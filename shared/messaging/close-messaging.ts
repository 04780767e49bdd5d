import type { NatsConnection, Subscription } from "nats";
import { asError } from "../errors";
import type { Logger } from "../logging/create-logger";
import type { Outbox } from "./outbox";

/** The request handlers still running: close() waits for them, because they may still answer. */
export interface InFlight {
  track(pending: Promise<void>, onError: (err: Error) => void): void;
  settled(): Promise<unknown>;
  readonly size: number;
}

export function createInFlight(): InFlight {
  const pendings = new Set<Promise<void>>();
  return {
    track: (pending, onError) => {
      const settled = pending.then(
        () => {
          pendings.delete(settled);
        },
        (err: unknown) => {
          pendings.delete(settled);
          onError(asError(err));
        },
      );
      pendings.add(settled);
    },
    settled: () => Promise.allSettled([...pendings]),
    get size() {
      return pendings.size;
    },
  };
}

/** Drains the subscriptions, waits for the handlers, drains the connection; closes it anyway after `timeoutMs`. */
export async function drainAndClose(p: {
  nc: NatsConnection;
  outbox: Outbox;
  subscriptions: readonly Subscription[];
  inFlight: InFlight;
  logger: Logger;
  timeoutMs: number;
}): Promise<void> {
  const { nc, inFlight, logger } = p;
  const drained = (async () => {
    await Promise.allSettled(p.subscriptions.map((sub) => sub.drain()));
    // Handlers still running may answer: the connection stays open until they are done.
    await inFlight.settled();
    await p.outbox.flush(); // their answers, before nats.js stops taking publishes
    await nc.drain();
  })();
  const outcome = await raceTimeout(drained, p.timeoutMs);
  if (outcome !== "done") {
    logger.warn("messaging drain did not finish; closing the connection", {
      at: "messaging.close",
      outcome,
      inFlight: inFlight.size,
    });
  }
  if (!nc.isClosed()) {
    await p.outbox.flush();
    await nc.close();
  }
  logger.info("messaging closed", { at: "messaging.close" });
}

/** "done", "failed" (the drain threw, e.g. the connection was already closed) or "timeout". */
async function raceTimeout(work: Promise<void>, timeoutMs: number): Promise<"done" | "failed" | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const finished = work.then(
    () => "done" as const,
    () => "failed" as const,
  );
  try {
    return await Promise.race([finished, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
