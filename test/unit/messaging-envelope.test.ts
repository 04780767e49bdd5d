import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  ENVELOPE_VERSION,
  InvalidEnvelopeError,
  MAX_INBOX_LENGTH,
  encodeEnvelope,
  isSupportedVersion,
  parseEnvelope,
} from "../../shared/messaging";

const INBOX = "_INBOX.4f8e0c1e-3b7a-4b8e-9d55-0d7c7a2b1f00/1";
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const asRequest = { requireInbox: true } as const;

function rejection(
  body: Uint8Array | string,
  options: { requireInbox: boolean; maxBytes?: number } = asRequest,
): InvalidEnvelopeError {
  try {
    parseEnvelope(body, options);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidEnvelopeError);
    return err as InvalidEnvelopeError;
  }
  throw new Error("parseEnvelope accepted the body");
}

describe("messaging envelope (docs/protocol.md#envelope)", () => {
  it("encodes the four fields in the original's order, undefined as null, bigint as a decimal string", () => {
    const text = encodeEnvelope({
      responseInbox: INBOX,
      data: { bid: { amount: 10n }, bidSignature: undefined, list: [undefined, 1] },
    });
    expect(text).toBe(
      `{"responseInbox":"${INBOX}","data":{"bid":{"amount":"10"},"bidSignature":null,"list":[null,1]},"version":"0.0.1","error":null}`,
    );
    expect(ENVELOPE_VERSION).toBe("0.0.1");
  });

  it("writes the same bytes whether or not the value needs the replacer (the plain fast path)", () => {
    // The original's encoding: JSON.stringify with the undefined → null, bigint → string replacer, always.
    const original = (data: unknown): string =>
      JSON.stringify({ responseInbox: INBOX, data, version: "0.0.1", error: null }, (_k, v: unknown) =>
        v === undefined ? null : typeof v === "bigint" ? v.toString() : v,
      );
    const bid = { user: "0xab", amount: "10", sendingChainId: 1337, dryRun: false, bidExpiry: 1.5, nan: NaN };
    for (const data of [
      { bid, bidSignature: null, gasFeeInReceivingToken: "5" },
      { bid, bidSignature: undefined },
      { nested: [{ a: [1, "x", null, true] }, []], empty: {} },
      { amount: 10n },
      { when: new Date(0), buffer: Buffer.from("ab") },
      { fn: () => 1, list: [() => 1, Symbol("s")] },
      Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 }),
      { toJSON: () => ({ replaced: undefined }) },
      "text",
      null,
    ]) {
      expect(encodeEnvelope({ responseInbox: INBOX, data })).toBe(original(data));
    }
  });

  it("encodes an error reply with data null and the NxtpErrorJson fields", () => {
    const text = encodeEnvelope({
      responseInbox: INBOX,
      data: null,
      error: { message: "no", type: "NotEnoughLiquidity", context: { chainId: 1 } },
    });
    expect(JSON.parse(text)).toEqual({
      responseInbox: INBOX,
      data: null,
      version: "0.0.1",
      error: { message: "no", context: { chainId: 1 }, type: "NotEnoughLiquidity" },
    });
  });

  it("round-trips through parse, from bytes and from a string", () => {
    const text = encodeEnvelope({ responseInbox: INBOX, data: { a: 1 } });
    for (const body of [text, bytes(text)]) {
      expect(parseEnvelope(body, asRequest)).toEqual({
        responseInbox: INBOX,
        data: { a: 1 },
        version: "0.0.1",
        error: null,
      });
    }
  });

  it("accepts any version whose major part is 0 and refuses the others", () => {
    for (const v of ["0.0.1", "0.1.0", "0", "0.9.9-beta"]) {
      expect(isSupportedVersion(v)).toBe(true);
      expect(
        parseEnvelope(JSON.stringify({ responseInbox: INBOX, data: null, version: v, error: null }), asRequest).version,
      ).toBe(v);
    }
    for (const v of ["1.0.0", "00.1", "", ".0", "10.0.0"]) {
      expect(isSupportedVersion(v)).toBe(false);
    }
    for (const version of ["1.0.0", 0, null, undefined]) {
      const err = rejection(JSON.stringify({ responseInbox: INBOX, data: null, version }));
      expect(err.reason).toBe("bad_version");
      expect(err.code).toBe("ENVELOPE_VERSION_UNSUPPORTED");
    }
  });

  it("fills missing data and error with null", () => {
    expect(parseEnvelope(JSON.stringify({ responseInbox: INBOX, version: "0.0.1" }), asRequest)).toEqual({
      responseInbox: INBOX,
      data: null,
      version: "0.0.1",
      error: null,
    });
  });

  it.each([
    ["not JSON", "{not json", "not_utf8_json"],
    ["truncated JSON", '{"responseInbox":"x","data":', "not_utf8_json"],
    ["empty body", "", "not_utf8_json"],
    ["a JSON string", '"hello"', "not_object"],
    ["a JSON number", "42", "not_object"],
    ["JSON null", "null", "not_object"],
    ["a JSON array", "[1,2]", "not_object"],
    ["a missing inbox", JSON.stringify({ data: {}, version: "0.0.1" }), "bad_inbox"],
    ["a null inbox", JSON.stringify({ responseInbox: null, data: {}, version: "0.0.1" }), "bad_inbox"],
    ["an empty inbox", JSON.stringify({ responseInbox: "", data: {}, version: "0.0.1" }), "bad_inbox"],
    ["a numeric inbox", JSON.stringify({ responseInbox: 7, data: {}, version: "0.0.1" }), "bad_inbox"],
    [
      "an overlong inbox",
      JSON.stringify({ responseInbox: "x".repeat(MAX_INBOX_LENGTH + 1), data: {}, version: "0.0.1" }),
      "bad_inbox",
    ],
    [
      "an error that is a string",
      JSON.stringify({ responseInbox: INBOX, data: {}, version: "0.0.1", error: "boom" }),
      "bad_error",
    ],
    [
      "an error without message",
      JSON.stringify({ responseInbox: INBOX, data: {}, version: "0.0.1", error: { type: "X" } }),
      "bad_error",
    ],
  ])("refuses a request body with %s", (_name, body, reason) => {
    const err = rejection(body);
    expect(err.reason).toBe(reason);
    expect(err.retriable).toBe(false);
  });

  it("refuses invalid UTF-8 bytes", () => {
    const body = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    expect(rejection(body).reason).toBe("not_utf8_json");
  });

  it("lets a response carry a null inbox, but not a malformed one", () => {
    const body = JSON.stringify({ responseInbox: null, data: { ok: true }, version: "0.0.1", error: null });
    expect(parseEnvelope(body, { requireInbox: false }).responseInbox).toBeNull();
    expect(rejection(JSON.stringify({ responseInbox: 1, version: "0.0.1" }), { requireInbox: false }).reason).toBe(
      "bad_inbox",
    );
  });

  it("normalises a peer's error to NxtpErrorJson", () => {
    const body = JSON.stringify({
      responseInbox: INBOX,
      data: null,
      version: "0.0.1",
      error: { message: "m", stack: "s", context: [1] },
    });
    expect(parseEnvelope(body, { requireInbox: false }).error).toEqual({ message: "m", type: "Error", context: {} });
  });

  it("drops a 1 MB body on its length alone, without parsing it", () => {
    const huge = new Uint8Array(1_000_000).fill(0x20);
    const parse = jest.spyOn(JSON, "parse");
    const err = rejection(huge);
    expect(err.reason).toBe("too_large");
    expect(err.code).toBe("MESSAGE_TOO_LARGE");
    expect(err.context).toMatchObject({ sizeBytes: 1_000_000, maxBytes: DEFAULT_MAX_PAYLOAD_BYTES });
    expect(parse).not.toHaveBeenCalled();
    // A string body is measured in UTF-8 bytes, not UTF-16 units.
    const wide = "é".repeat(40_000); // 40 000 units, 80 000 bytes
    expect(rejection(wide).reason).toBe("too_large");
    expect(parse).not.toHaveBeenCalled();
  });

  it("honours a custom size limit, and accepts a body exactly at it", () => {
    const text = encodeEnvelope({ responseInbox: INBOX, data: { pad: "x".repeat(100) } });
    const size = Buffer.byteLength(text);
    expect(parseEnvelope(text, { requireInbox: true, maxBytes: size }).data).toEqual({ pad: "x".repeat(100) });
    expect(rejection(text, { requireInbox: true, maxBytes: size - 1 }).reason).toBe("too_large");
  });

  it("parses a realistic body in well under 0.1 ms", () => {
    const body = bytes(encodeEnvelope({ responseInbox: INBOX, data: sampleAuctionPayload() }));
    const rounds = 2000;
    for (let i = 0; i < 200; i++) parseEnvelope(body, asRequest);
    const startedAt = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) parseEnvelope(body, asRequest);
    const perMessageMs = Number(process.hrtime.bigint() - startedAt) / 1e6 / rounds;
    expect(perMessageMs).toBeLessThan(0.1);
  });
});

function sampleAuctionPayload(): Record<string, unknown> {
  const a = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
  return {
    user: a,
    initiator: a,
    sendingChainId: 1337,
    sendingAssetId: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
    amount: "10000000000000000000",
    receivingChainId: 1338,
    receivingAssetId: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
    receivingAddress: a,
    callTo: "0x0000000000000000000000000000000000000000",
    callDataHash: "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
    encryptedCallData: "0x",
    expiry: 1795574643,
    transactionId: `0x${"01".repeat(32)}`,
    dryRun: false,
  };
}
