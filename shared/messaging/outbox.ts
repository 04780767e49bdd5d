import type { NatsConnection } from "nats";
import { asError } from "../errors";
import { MessagingPublishError } from "./errors";

/**
 * nats.js writes its buffer to the socket on a microtask after the first publish into it, so answers finished in
 * one event-loop turn (the bids whose reservations came back in one Redis read) still went out one write each,
 * interleaved with their continuations. Socket writes were the largest entry of the auction's profile.
 */
const OUTBOX_CHUNK_BYTES = 24 * 1024;

/**
 * The publishes of one event-loop turn, handed to nats.js together at its end (setImmediate): one socket write
 * for all of them. Order is kept. nats.js also writes at once, inline, when its buffer reaches 32 KiB (after the
 * message that crossed it), so a turn's publishes are handed over in chunks of at most OUTBOX_CHUNK_BYTES, each
 * written before the next is handed over; a publish marked `ridesOnPrevious` (a settled notice) never starts a
 * chunk, so it stays in the socket write of the answer before it (docs/auction.md, "Instances and failures"). Only
 * a single message over the limit is written alone, its notice in the next write.
 */
export interface Outbox {
  /** Throws MessagingPublishError once the connection is closed; a failure at hand-over is logged. */
  publish(subject: string, body: string, ridesOnPrevious: boolean): void;
  /** Hands everything queued to nats.js (before a flush's PING, before a drain); resolves once all is handed over. */
  flush(): Promise<void>;
}

interface Queued {
  readonly subject: string;
  readonly body: string;
  readonly ridesOnPrevious: boolean;
}

export function createOutbox(nc: NatsConnection, logError: (err: Error) => void): Outbox {
  let queued: Queued[] = [];
  let scheduled = false;
  let chain: Promise<void> | undefined;

  /** The head of the queue, up to OUTBOX_CHUNK_BYTES (at least one publish and the notices riding on it). */
  const handOverChunk = (): void => {
    let bytes = 0;
    let end = 0;
    for (; end < queued.length; end += 1) {
      const item = queued[end];
      const size = item.subject.length + item.body.length + 32; // the PUB line and CRLFs
      if (end > 0 && !item.ridesOnPrevious && bytes + size > OUTBOX_CHUNK_BYTES) break;
      bytes += size;
    }
    const chunk = end === queued.length ? queued : queued.slice(0, end);
    queued = end === queued.length ? [] : queued.slice(end);
    for (const { subject, body } of chunk) {
      try {
        nc.publish(subject, body);
      } catch (err) {
        logError(asError(err));
      }
    }
  };

  // Each further chunk on a microtask: it runs after the one nats.js queued to write the chunk before.
  const handOverRest = async (): Promise<void> => {
    try {
      while (queued.length > 0) {
        await Promise.resolve();
        handOverChunk();
      }
    } finally {
      chain = undefined;
    }
  };

  const flush = (): Promise<void> => {
    scheduled = false;
    if (chain !== undefined) return chain; // it takes whatever is queued meanwhile too
    handOverChunk();
    if (queued.length === 0) return Promise.resolve();
    chain = handOverRest();
    return chain;
  };

  return {
    publish: (subject, body, ridesOnPrevious) => {
      if (nc.isClosed()) {
        throw new MessagingPublishError("messaging publish failed: the connection is closed", { subject });
      }
      queued.push({ subject, body, ridesOnPrevious });
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => void flush());
      }
    },
    flush,
  };
}
