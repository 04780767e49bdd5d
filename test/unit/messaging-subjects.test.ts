import { Wallet } from "ethers";
import {
  InvalidSubjectError,
  isChecksummedAddress,
  noticeSubject,
  parseSubject,
  requestSubject,
  requestWildcard,
  responseSubject,
  responseWildcard,
  routerQueueGroup,
} from "../../shared/messaging";

const user = Wallet.createRandom().address;
const router = Wallet.createRandom().address;

describe("messaging subjects (docs/protocol.md#subjects)", () => {
  it("builds the request, response and wildcard subjects with checksummed addresses", () => {
    expect(requestWildcard("auction")).toBe("*.*.auction.request");
    expect(requestSubject(user, "metatx")).toBe(`${user}.${user}.metatx.request`);
    expect(responseSubject(user, router, "status")).toBe(`${user}.${router}.status.response`);
    expect(responseWildcard(user, "auction")).toBe(`${user}.*.auction.response`);
    expect(routerQueueGroup(router)).toBe(`auction-${router}`);
  });

  it("builds a router's notice to its own instances, off every request and response wildcard", () => {
    expect(noticeSubject(router, "auction-settled")).toBe(`${router}.${router}.auction-settled.notice`);
    expect(() => parseSubject(noticeSubject(router, "auction-settled"))).toThrow(InvalidSubjectError);
    expect(() => noticeSubject(router, "Auction.settled")).toThrow(InvalidSubjectError);
    expect(() => noticeSubject(router.toLowerCase(), "auction-settled")).toThrow(InvalidSubjectError);
  });

  it("refuses to build a subject from a lowercase or malformed address", () => {
    expect(() => requestSubject(user.toLowerCase(), "auction")).toThrow(InvalidSubjectError);
    expect(() => responseSubject("0x1234", router, "auction")).toThrow(InvalidSubjectError);
    expect(() => responseWildcard("*", "auction")).toThrow(InvalidSubjectError);
  });

  it("parses a subject into to, from, topic and kind", () => {
    expect(parseSubject(`${user}.${user}.auction.request`)).toEqual({
      to: user,
      from: user,
      topic: "auction",
      kind: "request",
    });
    expect(parseSubject(`${user}.${router}.metatx.response`)).toEqual({
      to: user,
      from: router,
      topic: "metatx",
      kind: "response",
    });
  });

  it.each([
    ["too few tokens", `${user}.auction.request`],
    ["too many tokens", `${user}.${user}.auction.request.x`],
    ["empty", ""],
    ["unknown topic", `${user}.${user}.swap.request`],
    ["unknown kind", `${user}.${user}.auction.reply`],
    ["lowercase address", `${user.toLowerCase()}.${user}.auction.request`],
    ["bad checksum", `${user.slice(0, 2)}${flipCase(user.slice(2))}.${user}.auction.request`],
    ["not an address", `0x1234.${user}.auction.request`],
    ["wildcard token", `*.${user}.auction.request`],
  ])("refuses a malformed subject: %s", (_name, subject) => {
    expect(() => parseSubject(subject)).toThrow(InvalidSubjectError);
    try {
      parseSubject(subject);
    } catch (err) {
      expect((err as InvalidSubjectError).code).toBe("INVALID_SUBJECT");
    }
  });

  it("checks the EIP-55 checksum, and remembers verdicts without changing them", () => {
    const bad = `0x${flipCase(user.slice(2))}`;
    for (let i = 0; i < 2; i++) {
      expect(isChecksummedAddress(user)).toBe(true);
      expect(isChecksummedAddress(bad)).toBe(bad === user);
      expect(isChecksummedAddress(user.toLowerCase())).toBe(false);
    }
  });
});

/** Swaps the case of every letter: a checksummed address then fails its checksum (unless it has no letters). */
function flipCase(hex: string): string {
  return [...hex].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join("");
}
