import { keccak256 } from "ethers";
import { loadConfig } from "../../shared/config";
import {
  PREPARE_DELAY_MARGIN_SEC,
  acceptedExpiryRange,
  checkAuctionExpiry,
} from "../../shared/protocol/auction-expiry";
import { MAX_ENCRYPTED_CALL_DATA_BYTES, parseAuctionPayload } from "../../shared/protocol/auction-payload";
import { quoteAuction } from "../../shared/protocol/auction-quote";
import { isReceiverExpiryValid, receiverExpiryFor } from "../../shared/protocol/expiry";

const ADDR = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const NOW = 1_800_000_000;

/** The auction payload shape the SDK 0.1.42 sends (docs/protocol.md#auction-request). */
function payload(): Record<string, unknown> {
  return {
    user: ADDR,
    initiator: ADDR,
    sendingChainId: 1337,
    sendingAssetId: TOKEN,
    amount: "10000000000000000000",
    receivingChainId: 1338,
    receivingAssetId: TOKEN,
    receivingAddress: ADDR,
    callTo: "0x0000000000000000000000000000000000000000",
    callDataHash: keccak256("0x"),
    encryptedCallData: "0x",
    expiry: NOW + 3 * 86400 + 3 * 3600,
    transactionId: "0x" + "01".repeat(32),
    dryRun: false,
  };
}

describe("parseAuctionPayload", () => {
  it("accepts the SDK's payload, keeps values exactly and ignores extra fields", () => {
    const result = parseAuctionPayload({ ...payload(), extra: 1 });
    expect(result).toMatchObject({ ok: true });
    if (!result.ok) return;
    expect(result.amount).toBe(10n ** 19n);
    expect(result.payload).toEqual(payload());
  });

  it.each<[string, Record<string, unknown>, string]>([
    ["amount 0", { amount: "0" }, "ZeroValueBid"],
    ["amount ''", { amount: "" }, "AmountInvalid"],
    ["a negative amount", { amount: "-5" }, "AmountInvalid"],
    ["a fractional amount", { amount: "1.5" }, "AmountInvalid"],
    ["an exponent", { amount: "1e18" }, "AmountInvalid"],
    ["hex digits", { amount: "0x10" }, "AmountInvalid"],
    ["amount 2^256", { amount: (1n << 256n).toString() }, "AmountInvalid"],
    ["a 1000-digit amount", { amount: "9".repeat(1000) }, "AmountInvalid"],
    ["a numeric amount", { amount: 5 }, "ParamsInvalid"],
    ["a short address", { user: "0x1234" }, "ParamsInvalid"],
    ["a non-hex address", { receivingAddress: "0x" + "zz".repeat(20) }, "ParamsInvalid"],
    ["a string chain id", { sendingChainId: "1337" }, "ParamsInvalid"],
    ["chain id 0", { receivingChainId: 0 }, "ParamsInvalid"],
    ["a fractional chain id", { receivingChainId: 1.5 }, "ParamsInvalid"],
    ["a string expiry", { expiry: "1800000000" }, "ParamsInvalid"],
    ["a short transaction id", { transactionId: "0xabcd" }, "ParamsInvalid"],
    ["a bad callDataHash", { callDataHash: "0x" + "g".repeat(64) }, "ParamsInvalid"],
    ["odd-length call data", { encryptedCallData: "0xabc" }, "ParamsInvalid"],
    [
      "oversized call data",
      { encryptedCallData: "0x" + "00".repeat(MAX_ENCRYPTED_CALL_DATA_BYTES + 1) },
      "ParamsInvalid",
    ],
    ["a string dryRun", { dryRun: "false" }, "ParamsInvalid"],
    ["a missing field", { callTo: undefined }, "ParamsInvalid"],
  ])("refuses %s", (_name, patch, code) => {
    const result = parseAuctionPayload({ ...payload(), ...patch });
    expect(result).toMatchObject({ ok: false });
    if (result.ok) return;
    expect(result.refusal.code).toBe(code);
  });

  it.each([null, "text", 5, [], true])("refuses data %p", (data) => {
    const result = parseAuctionPayload(data);
    expect(result.ok ? "ok" : result.refusal.code).toBe("ParamsInvalid");
  });
});

describe("checkAuctionExpiry", () => {
  it("accepts the SDK's default expiry (now + 3 d 3 h)", () => {
    expect(checkAuctionExpiry({ expiry: NOW + 3 * 86400 + 3 * 3600, nowSec: NOW })).toBeNull();
  });

  it("refuses expiry <= now + 300 as AuctionExpired", () => {
    expect(checkAuctionExpiry({ expiry: NOW + 300, nowSec: NOW })?.code).toBe("AuctionExpired");
    expect(checkAuctionExpiry({ expiry: NOW - 1, nowSec: NOW })?.code).toBe("AuctionExpired");
  });

  it("refuses expiries outside the window at the exact bounds", () => {
    const { minExclusive, maxExclusive } = acceptedExpiryRange(NOW);
    expect(checkAuctionExpiry({ expiry: minExclusive, nowSec: NOW })?.code).toBe("ExpiryOutOfWindow");
    expect(checkAuctionExpiry({ expiry: minExclusive + 1, nowSec: NOW })).toBeNull();
    expect(checkAuctionExpiry({ expiry: maxExclusive - 1, nowSec: NOW })).toBeNull();
    expect(checkAuctionExpiry({ expiry: maxExclusive, nowSec: NOW })?.code).toBe("ExpiryOutOfWindow");
    expect(checkAuctionExpiry({ expiry: NOW + 2 * 86400, nowSec: NOW })?.code).toBe("ExpiryOutOfWindow");
    expect(checkAuctionExpiry({ expiry: NOW + 30 * 86400, nowSec: NOW })?.code).toBe("ExpiryOutOfWindow");
  });

  it("never accepts an expiry the receiving prepare would refuse at any time until the latest prepare", () => {
    const latest = NOW + 300 + PREPARE_DELAY_MARGIN_SEC;
    for (let expiry = NOW; expiry < NOW + 9 * 86400; expiry += 997) {
      if (checkAuctionExpiry({ expiry, nowSec: NOW }) !== null) continue;
      for (const t of [NOW, Math.floor((NOW + latest) / 2), latest]) {
        expect(isReceiverExpiryValid({ receiverExpiry: receiverExpiryFor(expiry), nowSec: t })).toBe(true);
      }
    }
  });
});

describe("quoteAuction", () => {
  it("applies the router fee then subtracts the gas fee", () => {
    expect(quoteAuction({ amount: 1_000_000_000n, inputDecimals: 6, outputDecimals: 6, gasFee: 500_000n })).toEqual({
      amountReceived: 999_000_000n,
      gasFee: 500_000n,
    });
    expect(
      quoteAuction({ amount: 1_234_567_891_234_567_891n, inputDecimals: 18, outputDecimals: 6, gasFee: 0n }),
    ).toEqual({
      amountReceived: 1_233_949n,
      gasFee: 0n,
    });
  });

  it("refuses a gas fee that leaves nothing (NotEnoughAmount)", () => {
    expect(quoteAuction({ amount: 1_000n, inputDecimals: 6, outputDecimals: 6, gasFee: 999n })).toMatchObject({
      code: "NotEnoughAmount",
    });
    expect(quoteAuction({ amount: 1_000n, inputDecimals: 6, outputDecimals: 6, gasFee: 2_000n })).toMatchObject({
      code: "NotEnoughAmount",
    });
    expect(quoteAuction({ amount: 1n, inputDecimals: 6, outputDecimals: 6, gasFee: 0n })).toMatchObject({
      code: "NotEnoughAmount",
    });
  });
});

describe("config: mainnetEquivalent and nativeMainnetEquivalent", () => {
  const MAINNET_USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
  const raw = (asset: Record<string, unknown>, chain: Record<string, unknown> = {}): Record<string, unknown> => ({
    adminToken: "a-long-enough-admin-token-for-tests",
    mnemonic: "test test test test test test test test test test test junk",
    chainConfig: {
      "1": { providers: ["http://127.0.0.1:8545"] },
      "1337": { providers: ["http://127.0.0.1:18545"], transactionManagerAddress: TOKEN, ...chain },
    },
    swapPools: [
      {
        assets: [
          { chainId: 1337, assetId: TOKEN, ...asset },
          { chainId: 1, assetId: MAINNET_USDC },
        ],
      },
    ],
  });

  it("keeps both keys, checksummed, without an unknown-key warning", () => {
    const { config, warnings } = loadConfig(
      raw(
        { mainnetEquivalent: MAINNET_USDC.toLowerCase() },
        { nativeMainnetEquivalent: "0x0000000000000000000000000000000000000000" },
      ),
      {},
    );
    expect(config.swapPools[0].assets[0].mainnetEquivalent).toBe(MAINNET_USDC);
    expect(config.chainConfig["1337"].nativeMainnetEquivalent).toBe("0x0000000000000000000000000000000000000000");
    expect(warnings.filter((w) => w.includes("nativeMainnetEquivalent") || w.includes("mainnetEquivalent"))).toEqual(
      [],
    );
  });

  it("leaves them unset by default", () => {
    const { config } = loadConfig(raw({}), {});
    expect(config.swapPools[0].assets[0].mainnetEquivalent).toBeUndefined();
    expect(config.chainConfig["1337"].nativeMainnetEquivalent).toBeUndefined();
  });

  it("refuses a malformed address in either key", () => {
    expect(() => loadConfig(raw({ mainnetEquivalent: "0x1234" }), {})).toThrow(
      /swapPools\[0\]\.assets\[0\]\.mainnetEquivalent/,
    );
    expect(() => loadConfig(raw({}, { nativeMainnetEquivalent: "eth" }), {})).toThrow(
      /chainConfig\.1337\.nativeMainnetEquivalent/,
    );
  });
});
