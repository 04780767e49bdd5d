import { getAddress, hexlify, randomBytes } from "ethers";
import { withdrawalMatcher } from "../../services/submitter/operations/find-own-withdrawal";
import { contractInterface } from "../../shared/chain/contracts";

const tm = contractInterface("TransactionManager");
const address = (): string => getAddress(hexlify(randomBytes(20)));
const ROUTER = address();
const ASSET = address();
const RECIPIENT = address();

/** A LiquidityRemoved log's data as the contract emits it (ethers' encoding of the event, the reference). */
function logData(amount: bigint, recipient: string): string {
  return tm.encodeEventLog("LiquidityRemoved", [ROUTER, ASSET, amount, recipient]).data;
}

/**
 * The withdrawal search compares each LiquidityRemoved log's data with the job's words as text instead of decoding
 * it: the same answers as decoding (amount and recipient; amount only in router-contract mode, where the contract
 * pays its own recipient).
 */
describe("withdrawalMatcher", () => {
  const job = { chainId: 1337, assetId: ASSET, amount: "1000", recipientAddress: RECIPIENT, requestId: "r" };

  it("matches the job's amount and recipient, and nothing else, when the recipient is in the event", () => {
    const isOwn = withdrawalMatcher(job, true);
    expect(isOwn(logData(1000n, RECIPIENT))).toBe(true);
    // The node's hex case is not the job's: an upper-case answer is the same log.
    expect(isOwn(`0x${logData(1000n, RECIPIENT).slice(2).toUpperCase()}`)).toBe(true);
    expect(isOwn(logData(1000n, address()))).toBe(false);
    expect(isOwn(logData(1001n, RECIPIENT))).toBe(false);
    expect(isOwn(logData(1000n * 2n ** 160n, RECIPIENT))).toBe(false);
    expect(isOwn("0x")).toBe(false);
  });

  it("matches on the amount alone in router-contract mode", () => {
    const isOwn = withdrawalMatcher(job, false);
    expect(isOwn(logData(1000n, RECIPIENT))).toBe(true);
    expect(isOwn(logData(1000n, address()))).toBe(true);
    expect(isOwn(logData(999n, RECIPIENT))).toBe(false);
    expect(isOwn(logData(1000n, RECIPIENT).slice(0, 66))).toBe(false);
  });
});
