"use strict";

/**
 * Keeps the SDK offline (test/sdk/README.md, "Offline by construction"): every non-loopback connection is refused
 * and recorded. Two layers, both installed before the SDK is required:
 * - the adapter of the shared axios@0.21.4 that nxtp-utils, nxtp-sdk and nxtp-txservice all resolve, which is how
 *   the SDK reaches the Connext subgraph-health worker and Gelato (expected, refused gracefully by the SDK);
 * - net.Socket#connect, under every other client (ethers v5 fetchJson, graphql-request's cross-fetch, ts-nats):
 *   anything caught here went around axios and is unexpected.
 */

const net = require("node:net");

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

function isLoopback(host) {
  return host === undefined || host === null || LOOPBACK_HOSTS.has(String(host).toLowerCase());
}

function refused(message) {
  return Object.assign(new Error(message), { code: "ECONNREFUSED" });
}

/** The host of a net.Socket#connect call, or undefined for a unix socket (always allowed). */
function connectHost(args) {
  // net.createConnection passes its normalized arguments as one array.
  const list = Array.isArray(args[0]) ? args[0] : args;
  const first = list[0];
  if (first !== null && typeof first === "object") {
    return first.path !== undefined && first.path !== null ? undefined : (first.host ?? "localhost");
  }
  if (typeof first === "string" && !/^\d+$/.test(first)) return undefined; // a pipe path
  return typeof list[1] === "string" ? list[1] : "localhost";
}

/**
 * Installs both layers; `onBlocked({layer, target})` is called for each refused call. Returns the list of
 * refused calls (live, for the driver's final report) and `uninstall` (for the guard's own test).
 */
function installNetworkGuard(axios, httpAdapter, onBlocked) {
  const blocked = [];
  const record = (layer, target) => {
    const entry = { layer, target };
    blocked.push(entry);
    onBlocked(entry);
  };

  axios.defaults.adapter = (config) => {
    const url = new URL(config.url, config.baseURL);
    if (isLoopback(url.hostname)) return httpAdapter(config);
    record("axios", `${url.origin}${url.pathname}`);
    return Promise.reject(refused(`blocked non-loopback call: ${config.method ?? "get"} ${url.origin}${url.pathname}`));
  };

  const originalAdapter = axios.defaults.adapter;
  const originalConnect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function guardedConnect(...args) {
    const host = connectHost(args);
    if (isLoopback(host)) return originalConnect.apply(this, args);
    record("socket", String(host));
    process.nextTick(() => this.destroy(refused(`blocked non-loopback connection to ${host}`)));
    return this;
  };
  const uninstall = () => {
    axios.defaults.adapter = originalAdapter;
    net.Socket.prototype.connect = originalConnect;
  };
  return { blocked, uninstall };
}

module.exports = { installNetworkGuard };
