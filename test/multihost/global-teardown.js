"use strict";
/**
 * Jest globalTeardown: runs once after every test file, even when a case or a whole worker failed. Deletes the
 * multi-host beds (network namespaces named nxmh<pid>-…, test/multihost/netns.ts) left by this run's workers or
 * by any earlier run whose process is gone: their processes SIGKILLed first, then the namespace. Beds of another
 * live run on the machine are left alone. A machine without `ip` or root rights has no bed: nothing to do.
 */
const { execFileSync } = require("node:child_process");
const { readFileSync } = require("node:fs");

const PREFIX = /^nxmh(\d+)-/;

function ip(args) {
  return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 10_000 });
}

/** The parent pid of `pid`, or undefined when it is gone. */
function parentOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

module.exports = async function globalTeardown() {
  let names;
  try {
    names = ip(["netns", "list"])
      .split("\n")
      .map((l) => l.trim().split(" ")[0])
      .filter((n) => PREFIX.test(n));
  } catch {
    return;
  }
  for (const ns of names) {
    const owner = Number(PREFIX.exec(ns)[1]);
    const parent = parentOf(owner);
    // Ours: made in this process (jest --runInBand) or by one of its workers; or stale: its maker is gone.
    const ours = owner === process.pid || parent === process.pid || parent === undefined;
    if (!ours) continue; // a live bed of another run
    try {
      for (const pid of ip(["netns", "pids", ns]).split(/\s+/).filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // already gone
        }
      }
      ip(["netns", "del", ns]);
      process.stdout.write(`multihost teardown: deleted stale namespace ${ns}\n`);
    } catch {
      // deleted meanwhile
    }
  }
};
