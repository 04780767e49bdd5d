import { HDNodeWallet, SigningKey, getBytes } from "ethers";
import { RouterError } from "../../shared/errors";
import {
  RemoteSignerBadResponseError,
  RemoteSignerUnavailableError,
  SignerConfigError,
} from "../../shared/signer/errors";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { createRemoteSigner } from "../../shared/signer/remote-signer";
import { RouterSigner, UnsignedTransaction } from "../../shared/signer/router-signer";
import { Web3SignerServer, startWeb3SignerServer } from "../harness/web3signer-server";

// docs/protocol.md#test-vectors.
const MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const ADDRESS = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const BID_HASH = "0x59d43a1d7af4812a76481bd3cc4e57b585d50271d21949354b34a685c57f601f";
const BID_SIGNATURE =
  "0x3bca718664ffcb0bd7c973db2093fda73929a03af71b3e2808a72645700ce9c553ad991c7b193b324cefae666fd58501569316fc467ae09323be523f83373b431b";
const PASSWORD = "s3cr3t-Passw0rd";

const LEGACY_TX: UnsignedTransaction = {
  type: 0,
  chainId: 56,
  nonce: 12,
  to: "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e",
  data: "0xa9059cbb0000000000000000000000001111111111111111111111111111111111111111",
  value: 0n,
  gasLimit: 120_000n,
  gasPrice: 3_000_000_000n,
};

const EIP1559_TX: UnsignedTransaction = {
  type: 2,
  chainId: 137n,
  nonce: 3,
  to: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
  data: "0x",
  value: 10n ** 18n,
  gasLimit: 21_000n,
  maxFeePerGas: 80_000_000_000n,
  maxPriorityFeePerGas: 30_000_000_000n,
};

const PRIVATE_KEY = HDNodeWallet.fromPhrase(MNEMONIC).privateKey;

let server: Web3SignerServer;
const local: RouterSigner = createMnemonicSigner(MNEMONIC);

beforeEach(async () => {
  server = await startWeb3SignerServer({ privateKey: PRIVATE_KEY });
});

afterEach(async () => {
  await server.stop();
});

/** Runs `p` and returns what it threw; fails the test if it resolved. */
async function rejectionOf(p: Promise<unknown>): Promise<RouterError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(RouterError);
    return err as RouterError;
  }
  throw new Error("expected a rejection");
}

function countRequests(path: RegExp): number {
  return server.requests.filter((r) => path.test(r.path)).length;
}

/** A fetch that answers `path` with `body` and forwards everything else to the real server. */
function fetchOverriding(path: RegExp, respond: () => Response): typeof fetch {
  return async (input, init) => (path.test(new URL(String(input)).pathname) ? respond() : fetch(input, init));
}

describe("remote signer against a web3signer-compatible server", () => {
  it("lists the same checksummed address as the mnemonic signer", async () => {
    const remote = createRemoteSigner({ url: server.url });
    expect(remote.kind).toBe("remote");
    await expect(remote.getAddress()).resolves.toBe(ADDRESS);
  });

  it("signs a string message byte-identically to the mnemonic signer", async () => {
    const remote = createRemoteSigner({ url: server.url });
    const message = "router status 2024 ✓";
    await expect(remote.signMessage(message)).resolves.toBe(await local.signMessage(message));
  });

  it("signs 32 raw bytes (the test-vector bid hash) to the published bid signature", async () => {
    const remote = createRemoteSigner({ url: server.url });
    await expect(remote.signMessage(getBytes(BID_HASH))).resolves.toBe(BID_SIGNATURE);
  });

  it.each([
    ["type 0", LEGACY_TX],
    ["type 2", EIP1559_TX],
  ])("produces the same raw %s transaction as the mnemonic signer", async (_label, tx) => {
    const remote = createRemoteSigner({ url: server.url });
    await expect(remote.signTransaction(tx)).resolves.toBe(await local.signTransaction(tx));
  });

  it("fetches the key list once across many signatures, including concurrent first calls", async () => {
    const remote = createRemoteSigner({ url: server.url });
    await Promise.all([remote.signMessage("a"), remote.signMessage("b"), remote.getAddress()]);
    for (let i = 0; i < 5; i++) {
      await remote.signMessage(`message ${i}`);
    }
    await remote.signTransaction(EIP1559_TX);
    expect(countRequests(/\/publicKeys$/)).toBe(1);
    expect(countRequests(/\/sign\//)).toBe(8);
  });

  it("strips a trailing slash from the URL", async () => {
    const remote = createRemoteSigner({ url: `${server.url}/` });
    await remote.signMessage("x");
    expect(server.requests.map((r) => r.path)).toEqual([
      "/api/v1/eth1/publicKeys",
      expect.stringMatching(/^\/api\/v1\/eth1\/sign\/0x[0-9a-f]{128}$/),
    ]);
  });

  it("rewrites a v of 0/1 from the server to 27/28", async () => {
    const remote = createRemoteSigner({ url: server.url });
    server.setFault("low-v");
    await expect(remote.signMessage(getBytes(BID_HASH))).resolves.toBe(BID_SIGNATURE);
    await expect(remote.signTransaction(LEGACY_TX)).resolves.toBe(await local.signTransaction(LEGACY_TX));
  });

  it("derives the address from a key listed with the 04 prefix as well", async () => {
    const prefixed = new SigningKey(PRIVATE_KEY).publicKey; // 0x04 + 64 bytes
    const remote = createRemoteSigner({
      url: server.url,
      fetchImpl: fetchOverriding(/\/publicKeys$/, () => Response.json([prefixed])),
    });
    await expect(remote.getAddress()).resolves.toBe(ADDRESS);
  });
});

describe("remote signer failures", () => {
  it("maps a 500 to RemoteSignerUnavailableError (retriable) and recovers once the server does", async () => {
    const remote = createRemoteSigner({ url: server.url });
    server.setFault("500");
    const err = await rejectionOf(remote.signMessage("x"));
    expect(err).toBeInstanceOf(RemoteSignerUnavailableError);
    expect(err.code).toBe("REMOTE_SIGNER_UNAVAILABLE");
    expect(err.retriable).toBe(true);

    // The failed key lookup must not be cached.
    server.setFault("none");
    await expect(remote.signMessage("x")).resolves.toBe(await local.signMessage("x"));
  });

  it("maps a 500 on the sign call (key already cached) to RemoteSignerUnavailableError", async () => {
    const remote = createRemoteSigner({ url: server.url });
    await remote.getAddress();
    server.setFault("500");
    await expect(remote.signTransaction(LEGACY_TX)).rejects.toBeInstanceOf(RemoteSignerUnavailableError);
  });

  it("maps an empty key list body to RemoteSignerBadResponseError (not retriable)", async () => {
    server.setFault("empty");
    const err = await rejectionOf(createRemoteSigner({ url: server.url }).getAddress());
    expect(err).toBeInstanceOf(RemoteSignerBadResponseError);
    expect(err.code).toBe("REMOTE_SIGNER_BAD_RESPONSE");
    expect(err.retriable).toBe(false);
  });

  it("maps an empty signature body to RemoteSignerBadResponseError", async () => {
    const remote = createRemoteSigner({ url: server.url });
    await remote.getAddress();
    server.setFault("empty");
    const err = await rejectionOf(remote.signMessage("x"));
    expect(err).toBeInstanceOf(RemoteSignerBadResponseError);
    expect(err.message).toContain("make sure your key file is configured correctly");
  });

  it("refuses a signature made by a different key than the one listed", async () => {
    const remote = createRemoteSigner({ url: server.url });
    server.setFault("wrong-key");
    await expect(remote.signMessage("x")).rejects.toBeInstanceOf(RemoteSignerBadResponseError);
    await expect(remote.signTransaction(EIP1559_TX)).rejects.toBeInstanceOf(RemoteSignerBadResponseError);
  });

  it("refuses a malformed signature", async () => {
    const remote = createRemoteSigner({
      url: server.url,
      fetchImpl: fetchOverriding(/\/sign\//, () => new Response("0xnot-a-signature")),
    });
    await expect(remote.signMessage("x")).rejects.toBeInstanceOf(RemoteSignerBadResponseError);
  });

  it("refuses an empty key list", async () => {
    const remote = createRemoteSigner({
      url: server.url,
      fetchImpl: fetchOverriding(/\/publicKeys$/, () => Response.json([])),
    });
    await expect(remote.getAddress()).rejects.toBeInstanceOf(RemoteSignerBadResponseError);
  });

  it("maps a 4xx (server does not hold the listed key) to RemoteSignerBadResponseError", async () => {
    const otherKey = `0x${new SigningKey("0x" + "11".repeat(32)).publicKey.slice(4)}`;
    const remote = createRemoteSigner({
      url: server.url,
      fetchImpl: fetchOverriding(/\/publicKeys$/, () => Response.json([otherKey])),
    });
    const err = await rejectionOf(remote.signMessage("x"));
    expect(err).toBeInstanceOf(RemoteSignerBadResponseError);
    expect(err.context.status).toBe(404);
  });

  it("maps a closed port to RemoteSignerUnavailableError", async () => {
    const url = server.url;
    await server.stop();
    server = await startWeb3SignerServer({ privateKey: PRIVATE_KEY }); // for afterEach
    const err = await rejectionOf(createRemoteSigner({ url }).getAddress());
    expect(err).toBeInstanceOf(RemoteSignerUnavailableError);
    expect(err.retriable).toBe(true);
  });

  it("gives up on a hanging server after timeoutMs with RemoteSignerUnavailableError", async () => {
    const remote = createRemoteSigner({ url: server.url, timeoutMs: 200 });
    await remote.getAddress();
    server.setFault("hang");
    const startedAtMs = Date.now();
    const err = await rejectionOf(remote.signMessage("x"));
    expect(err).toBeInstanceOf(RemoteSignerUnavailableError);
    expect(err.message).toContain("timed out");
    expect(Date.now() - startedAtMs).toBeLessThan(2_000);
  });

  it("rejects a non-http URL and a non-positive timeout as SignerConfigError", () => {
    expect(() => createRemoteSigner({ url: "ftp://127.0.0.1/" })).toThrow(SignerConfigError);
    expect(() => createRemoteSigner({ url: "not a url" })).toThrow(SignerConfigError);
    expect(() => createRemoteSigner({ url: server.url, timeoutMs: 0 })).toThrow(SignerConfigError);
  });
});

describe("remote signer URL credentials", () => {
  const withCredentials = (url: string): string => url.replace("http://", `http://router:${PASSWORD}@`);

  it("sends user info as Basic auth (fetch refuses it inside URLs) and signs normally", async () => {
    const remote = createRemoteSigner({ url: withCredentials(server.url) });
    await expect(remote.signMessage("x")).resolves.toBe(await local.signMessage("x"));
    const expected = `Basic ${Buffer.from(`router:${PASSWORD}`).toString("base64")}`;
    expect(server.requests.filter((r) => r.authorization !== expected)).toEqual([]);
  });

  it.each([
    ["500", "500" as const],
    ["hang", "hang" as const],
  ])("keeps the password out of the error on a %s", async (_label, fault) => {
    const remote = createRemoteSigner({ url: withCredentials(server.url), timeoutMs: 200 });
    server.setFault(fault);
    const err = await rejectionOf(remote.getAddress());
    expect(err).toBeInstanceOf(RemoteSignerUnavailableError);
    expectNoPassword(err);
  });

  it("keeps the password out of the error on a closed port", async () => {
    const url = withCredentials(server.url);
    await server.stop();
    server = await startWeb3SignerServer({ privateKey: PRIVATE_KEY });
    const err = await rejectionOf(createRemoteSigner({ url }).getAddress());
    expect(err).toBeInstanceOf(RemoteSignerUnavailableError);
    expectNoPassword(err);
  });

  it("keeps the password out of a SignerConfigError for a bad scheme", () => {
    let thrown: unknown;
    try {
      createRemoteSigner({ url: `ftp://router:${PASSWORD}@127.0.0.1/` });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SignerConfigError);
    expectNoPassword(thrown as RouterError);
  });
});

function expectNoPassword(err: RouterError): void {
  const cause = err.cause instanceof Error ? `${err.cause.message} ${String(err.cause.cause)}` : String(err.cause);
  const text = [err.message, err.stack ?? "", JSON.stringify(err), cause].join("\n");
  expect(text).not.toContain(PASSWORD);
}
