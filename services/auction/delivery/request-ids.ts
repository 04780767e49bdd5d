import { createHash } from "node:crypto";
import type { MessagingRequest } from "../../../shared/messaging/types";

/**
 * A request's id, identical on every instance: sha1 of the subject (the requester) and the body as received (its
 * inbox is unique). The owner gets each request twice, from its two subscriptions, one right after the other in
 * the same read: the last id is kept, and a delivery with the same subject and bytes reuses it.
 */
export function createRequestIds(): (request: MessagingRequest) => string {
  let last: { subject: string; raw: Uint8Array; id: string } | undefined;
  return (request) => {
    const raw = request.raw;
    if (raw === undefined) return hashRequest(request.subject, request.responseInbox);
    if (last !== undefined && last.subject === request.subject && Buffer.compare(last.raw, raw) === 0) return last.id;
    const id = hashRequest(request.subject, raw);
    last = { subject: request.subject, raw, id };
    return id;
  };
}

function hashRequest(subject: string, body: Uint8Array | string): string {
  return createHash("sha1").update(subject).update("\n").update(body).digest("base64url");
}
