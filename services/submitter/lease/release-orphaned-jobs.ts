import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { defineScript, reply } from "../../../shared/redis/script-runner";
import type { Fence } from "../send/fence";

/**
 * Run once by a new sender lease holder before its worker starts: every job still active in the queue belongs
 * to a previous holder (dead, or paused and fenced out), so its BullMQ lock is dropped and the job is marked
 * stalled; the worker's first stalled check, which runs as it starts, puts the job back at the head of the
 * queue. This is what makes takeover take about a second instead of BullMQ's lockDuration (30 s): see
 * docs/submitter.md. Touches BullMQ's own keys (names from the Queue object, layout of BullMQ 6): the script is
 * shared/redis/scripts/release-orphaned-jobs.lua.
 */
const RELEASE = defineScript({
  file: "release-orphaned-jobs",
  keys: ["lease", "active", "stalled", "stalledCheck"],
  args: ["fenceValue", "queuePrefix"],
  decode: reply.number,
});

/** The number of jobs released; -1 when the fence no longer holds (nothing was touched). */
export async function releaseOrphanedJobs(
  redis: Redis,
  queue: Pick<Queue, "keys" | "toKey">,
  fence: Fence,
): Promise<number> {
  return RELEASE.run(redis, {
    keys: {
      lease: fence.key,
      active: queue.keys.active,
      stalled: queue.keys.stalled,
      stalledCheck: queue.keys["stalled-check"],
    },
    args: { fenceValue: fence.value, queuePrefix: queue.toKey("") },
  });
}
