import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Fence } from "../send/fence";

/**
 * Run once by a new sender lease holder before its worker starts: every job still active in the queue belongs
 * to a previous holder (dead, or paused and fenced out), so its BullMQ lock is dropped and the job is marked
 * stalled; the worker's first stalled check, which runs as it starts, puts the job back at the head of the
 * queue. This is what makes takeover take about a second instead of BullMQ's lockDuration (30 s): see
 * docs/submitter.md. Touches BullMQ's own keys (names from the Queue object, layout of BullMQ 6).
 */
const RELEASE_SCRIPT = `
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return -1 end
local active = redis.call("LRANGE", KEYS[2], 0, -1)
for _, id in ipairs(active) do
  redis.call("DEL", ARGV[2] .. id .. ":lock")
  redis.call("SADD", KEYS[3], id)
end
redis.call("DEL", KEYS[4])
return #active
`;

/** The number of jobs released; -1 when the fence no longer holds (nothing was touched). */
export async function releaseOrphanedJobs(
  redis: Redis,
  queue: Pick<Queue, "keys" | "toKey">,
  fence: Fence,
): Promise<number> {
  return Number(
    await redis.eval(
      RELEASE_SCRIPT,
      4,
      fence.key,
      queue.keys.active,
      queue.keys.stalled,
      queue.keys["stalled-check"],
      fence.value,
      queue.toKey(""),
    ),
  );
}
