/**
 * The messaging contract every messaging user shares (docs/protocol.md#messaging). Nothing NATS-specific appears here:
 * the auction logic sees requests and answers them, the transport lives behind `Messaging`.
 */
export type MessagingTopic = "auction" | "metatx" | "status";

/** The NXTP error shape carried in an envelope's `error` (nxtp's NxtpErrorJson, without the stack). */
export interface NxtpErrorJson {
  readonly message: string;
  readonly type: string;
  readonly context: Readonly<Record<string, unknown>>;
}

/** A request received on `<to>.<from>.<topic>.request`, already parsed from its envelope. */
export interface MessagingRequest {
  readonly subject: string;
  /** Token 0 of the subject: the requester's messaging address, where the response goes. */
  readonly from: string;
  readonly topic: MessagingTopic;
  /** The envelope's `responseInbox`, echoed in the response so the requester can match it. */
  readonly responseInbox: string;
  /** The envelope's `data`, not validated: each handler validates its own payload. */
  readonly data: unknown;
  /** Wall clock when the message arrived (ms), for latency and staleness decisions. */
  readonly receivedAtMs: number;
  /** Size of the raw message body in bytes. */
  readonly sizeBytes: number;
  /** The raw body as received (identical on every subscriber: the auction's claim keys hash it). */
  readonly raw?: Uint8Array;
}

export type RequestHandler = (request: MessagingRequest) => Promise<void> | void;

export interface ServeOptions {
  /** NATS queue group: every request is delivered to exactly one member of the group; none: to every subscriber. */
  readonly queueGroup?: string;
}

/** A response as a client receives it on `<me>.*.<topic>.response`. */
export interface MessagingResponse {
  readonly subject: string;
  /** Token 1 of the subject: the responder's signer address. */
  readonly responder: string;
  readonly topic: MessagingTopic;
  readonly responseInbox: string | null;
  readonly data: unknown;
  readonly error: NxtpErrorJson | null;
  readonly receivedAtMs: number;
}

export type ResponseHandler = (response: MessagingResponse) => void;

export interface Messaging {
  /** Checksummed address of the messaging signer: token 1 of everything published. */
  readonly address: string;
  /**
   * Subscribes to `*.*.<topic>.request`. A message that is not a valid envelope (bad JSON, over the size
   * limit, wrong version, missing inbox) is logged and dropped before the handler runs; a handler's throw is
   * logged, never fatal.
   */
  serve(topic: MessagingTopic, handler: RequestHandler, options?: ServeOptions): void;
  /** Publishes `data` to `<request.from>.<address>.<topic>.response` with the request's inbox. */
  respond(request: MessagingRequest, data: unknown): void;
  /** Publishes an error reply (envelope `error` set, `data` null) the SDK surfaces as a failed request. */
  respondError(request: MessagingRequest, error: NxtpErrorJson): void;
  /** Client side: publishes `<address>.<address>.<topic>.request` with `responseInbox`. */
  request(topic: MessagingTopic, data: unknown, responseInbox: string): void;
  /** Client side: subscribes to `<address>.*.<topic>.response`. */
  onResponse(topic: MessagingTopic, handler: ResponseHandler): void;
  /**
   * Publishes `body` to this router's own instances (`<address>.<address>.<channel>.notice`); every subscriber of
   * the channel gets it, the publisher included. Same connection as the responses: a notice published right after
   * a response reaches the server after it, in the same socket write when published in the same synchronous turn.
   */
  notify(channel: string, body: string): void;
  /** Subscribes to this router's notices on `channel`; the handler runs as each arrives, in order. */
  onNotice(channel: string, handler: (body: string) => void): void;
  /** Connected right now (false while reconnecting). */
  isConnected(): boolean;
  /** Round trip to the server; resolves when every message published before it has been processed by the server. */
  flush(): Promise<void>;
  /** Drains subscriptions (in-flight handlers finish) and closes; idempotent. */
  close(): Promise<void>;
}
