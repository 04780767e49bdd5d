import { MESSAGING_DEFAULTS } from "../../shared/config/defaults";
import { MessagingConfigError, messagingEndpoints, splitServers } from "../../shared/messaging";

describe("messaging endpoints", () => {
  it("splits a comma-separated server list, trimming blanks", () => {
    expect(splitServers("nats://a:4222, nats://b:4222,,")).toEqual(["nats://a:4222", "nats://b:4222"]);
    expect(splitServers(["nats://a:4222"])).toEqual(["nats://a:4222"]);
  });

  it("refuses an empty list and WebSocket endpoints the node client cannot dial", () => {
    expect(() => splitServers(" , ")).toThrow(MessagingConfigError);
    expect(() => splitServers("nats://a:4222,wss://websocket.connext.provide.network")).toThrow(MessagingConfigError);
  });

  it("takes the per-network defaults the config resolved: mainnet's three cluster nodes", () => {
    const { servers, authUrl } = messagingEndpoints(MESSAGING_DEFAULTS.mainnet);
    expect(servers).toEqual([
      "nats://nats1.connext.provide.network:4222",
      "nats://nats2.connext.provide.network:4222",
      "nats://nats3.connext.provide.network:4222",
    ]);
    expect(authUrl).toBe("https://auth.connext.network");
    expect(messagingEndpoints(MESSAGING_DEFAULTS.local)).toEqual({
      servers: ["nats://127.0.0.1:4222"],
      authUrl: "http://127.0.0.1:5040",
    });
  });
});
