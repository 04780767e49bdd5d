import { createServer, type AddressInfo } from "node:net";

/**
 * Asks the kernel for a free loopback port by binding port 0 and closing again. The port can in theory be
 * taken before the child binds it, so callers retry on "address in use" (see `startOnFreePort`).
 */
export function getFreePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0, exclusive: true }, () => {
      const { port } = server.address() as AddressInfo;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}
