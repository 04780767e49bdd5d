"use strict";
/**
 * Runs inside the bed's `t` namespace (ip netns exec <bed>t node forward.js <socket>): the test process, which
 * stays in the machine's own namespace, reaches the bed's hosts only through this unix socket. Each connection
 * starts with one line "host:port\n" naming a bed address; the rest is piped both ways. Refuses any address
 * outside the bed's /24 (argv[3]), so the test can never send traffic anywhere else.
 */
const net = require("node:net");
const fs = require("node:fs");

const [socketPath, subnet] = process.argv.slice(2);
fs.rmSync(socketPath, { force: true });
const server = net.createServer((client) => {
  let head = Buffer.alloc(0);
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk]);
    const nl = head.indexOf(10);
    if (nl < 0) return;
    client.removeListener("data", onData);
    client.pause();
    const [host, port] = head.subarray(0, nl).toString().trim().split(":");
    if (!host.startsWith(`${subnet}.`)) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ host, port: Number(port) });
    upstream.once("connect", () => {
      upstream.write(head.subarray(nl + 1));
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
  };
  client.on("data", onData);
  client.on("error", () => undefined);
});
server.listen(socketPath, () => process.stdout.write("forwarding\n"));
