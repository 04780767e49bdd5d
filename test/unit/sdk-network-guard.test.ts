import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";
import { createServer, connect, type AddressInfo } from "node:net";

/**
 * test/sdk/network-guard.js keeps the real SDK offline in test/e2e/sdk.test.ts. Plain JavaScript with no
 * dependency of its own (axios is passed in), so it is loaded here with a stand-in axios.
 */
interface Blocked {
  readonly layer: "axios" | "socket";
  readonly target: string;
}
interface AxiosLike {
  defaults: { adapter?: (config: { url: string; method?: string }) => Promise<unknown> };
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain JS module of test/sdk, outside the TypeScript build
const { installNetworkGuard } = require("../sdk/network-guard.js") as {
  installNetworkGuard(
    axios: AxiosLike,
    httpAdapter: (config: unknown) => Promise<unknown>,
    onBlocked: (entry: Blocked) => void,
  ): {
    blocked: Blocked[];
    uninstall(): void;
  };
};

const errorCodeOf = (start: (onError: (err: NodeJS.ErrnoException) => void) => void): Promise<string | undefined> =>
  new Promise((resolve) => start((err) => resolve(err.code)));

describe("the SDK's network guard", () => {
  const axios: AxiosLike = { defaults: {} };
  const httpAdapter = jest.fn(async () => ({ status: 200 }));
  const seen: Blocked[] = [];
  let guard: ReturnType<typeof installNetworkGuard>;

  beforeEach(() => {
    seen.length = 0;
    guard = installNetworkGuard(axios, httpAdapter, (entry) => seen.push(entry));
  });
  afterEach(() => guard.uninstall());

  it("passes loopback axios calls to the real adapter and refuses the others as ECONNREFUSED", async () => {
    const adapter = axios.defaults.adapter;
    if (!adapter) throw new Error("no adapter installed");
    await expect(adapter({ url: "http://127.0.0.1:5040/auth/0xabc" })).resolves.toEqual({ status: 200 });
    await expect(adapter({ url: "https://relay.gelato.digital/relays/", method: "get" })).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
    expect(httpAdapter).toHaveBeenCalledTimes(1);
    expect(seen).toEqual([{ layer: "axios", target: "https://relay.gelato.digital/relays/" }]);
  });

  it("refuses http, https and raw sockets to other hosts before any DNS lookup, and records each", async () => {
    // .invalid never resolves: a DNS lookup would end in ENOTFOUND, not the guard's ECONNREFUSED.
    expect(await errorCodeOf((onError) => httpGet("http://sdk-guard.invalid/x").on("error", onError))).toBe(
      "ECONNREFUSED",
    );
    expect(await errorCodeOf((onError) => httpsGet("https://sdk-guard.invalid/x").on("error", onError))).toBe(
      "ECONNREFUSED",
    );
    expect(await errorCodeOf((onError) => connect(4222, "nats.sdk-guard.invalid").on("error", onError))).toBe(
      "ECONNREFUSED",
    );
    expect(guard.blocked.map((b) => `${b.layer} ${b.target}`)).toEqual([
      "socket sdk-guard.invalid",
      "socket sdk-guard.invalid",
      "socket nats.sdk-guard.invalid",
    ]);
  });

  it("lets loopback sockets through", async () => {
    const server = createServer((socket) => socket.end("hi"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const received = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let text = "";
      socket.on("data", (chunk) => (text += chunk.toString()));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(received).toBe("hi");
    expect(guard.blocked).toEqual([]);
  });
});
