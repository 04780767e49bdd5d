import { getAddress } from "ethers";
import { InvalidSubjectError } from "./errors";
import type { MessagingTopic } from "./types";

/**
 * Subjects of docs/protocol.md#subjects: `<to>.<from>.<topic>.request|response`, addresses checksummed. The auth
 * server only lets a client publish where token 1 is its own address, so token 1 names the publisher.
 */
export type SubjectKind = "request" | "response";

export interface ParsedSubject {
  readonly to: string;
  readonly from: string;
  readonly topic: MessagingTopic;
  readonly kind: SubjectKind;
}

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

// getAddress costs ~14 µs (a keccak); requesters reuse their address, so remembered verdicts keep the hot
// path at a Map lookup. Cleared when full rather than LRU-evicted: simpler, and a refill is cheap.
const CHECKSUM_CACHE_MAX = 4096;
const checksumVerdicts = new Map<string, boolean>();

/** True for a `0x` address in its EIP-55 checksummed form (the only form the Connext network uses in subjects). */
export function isChecksummedAddress(value: string): boolean {
  const known = checksumVerdicts.get(value);
  if (known !== undefined) {
    return known;
  }
  let verdict = false;
  if (HEX_ADDRESS.test(value)) {
    try {
      verdict = getAddress(value) === value;
    } catch {
      verdict = false;
    }
  }
  if (checksumVerdicts.size >= CHECKSUM_CACHE_MAX) {
    checksumVerdicts.clear();
  }
  checksumVerdicts.set(value, verdict);
  return verdict;
}

export function isMessagingTopic(value: string): value is MessagingTopic {
  return value === "auction" || value === "metatx" || value === "status";
}

/**
 * The NATS queue group the auction instances of one router share (ServeOptions.queueGroup): keyed by the
 * router signer, so each request reaches one instance per router, while other routers still all get it. The
 * name is part of a running deployment: instances of two versions must agree on it during a rolling restart.
 */
export function routerQueueGroup(signerAddress: string): string {
  return `auction-${assertAddress(signerAddress, "signer")}`;
}

/** What a router subscribes to for a topic: every requester's `<me>.<me>.<topic>.request`. */
export function requestWildcard(topic: MessagingTopic): string {
  return `*.*.${topic}.request`;
}

/** What a client subscribes to for its answers: `<me>.*.<topic>.response`, any responder. */
export function responseWildcard(me: string, topic: MessagingTopic): string {
  return `${assertAddress(me, "me")}.*.${topic}.response`;
}

/** A client's own request subject: it is both addressee and publisher (`<me>.<me>.<topic>.request`). */
export function requestSubject(me: string, topic: MessagingTopic): string {
  assertAddress(me, "me");
  return `${me}.${me}.${topic}.request`;
}

/** The reply to a request from `to`, published by `from` (the responder's own address). */
export function responseSubject(to: string, from: string, topic: MessagingTopic): string {
  return `${assertAddress(to, "to")}.${assertAddress(from, "from")}.${topic}.response`;
}

/** A notice channel: lowercase letters, digits and dashes (one subject token). */
const NOTICE_CHANNEL = /^[a-z][a-z0-9-]*$/;

/**
 * A router's notice to its own instances, `<me>.<me>.<channel>.notice`: token 1 is the publisher, as the auth
 * server requires, and the fourth token keeps it off every request and response wildcard.
 */
export function noticeSubject(me: string, channel: string): string {
  assertAddress(me, "me");
  if (!NOTICE_CHANNEL.test(channel)) {
    throw new InvalidSubjectError("notice channel must be lowercase letters, digits and dashes", {
      channel: clip(channel),
    });
  }
  return `${me}.${me}.${channel}.notice`;
}

/**
 * Splits a subject into its four tokens and refuses anything else: a wrong token count, an address that
 * is not checksummed hex, an unknown topic or kind. Throws InvalidSubjectError.
 */
export function parseSubject(subject: string): ParsedSubject {
  const tokens = subject.split(".");
  if (tokens.length !== 4) {
    throw new InvalidSubjectError("subject must have 4 tokens", { subject: clip(subject) });
  }
  const [to, from, topic, kind] = tokens as [string, string, string, string];
  if (!isChecksummedAddress(to) || !isChecksummedAddress(from)) {
    throw new InvalidSubjectError("subject addresses must be checksummed", { subject: clip(subject) });
  }
  if (!isMessagingTopic(topic)) {
    throw new InvalidSubjectError("subject has an unknown topic", { subject: clip(subject) });
  }
  if (kind !== "request" && kind !== "response") {
    throw new InvalidSubjectError("subject must end in request or response", { subject: clip(subject) });
  }
  return { to, from, topic, kind };
}

function assertAddress(value: string, role: string): string {
  if (!isChecksummedAddress(value)) {
    throw new InvalidSubjectError(`subject ${role} must be a checksummed address`, { [role]: clip(value) });
  }
  return value;
}

/** Subjects come from the network: keep what lands in logs short. */
function clip(value: string): string {
  return value.length > 200 ? `${value.slice(0, 200)}…` : value;
}
