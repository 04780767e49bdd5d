import { defineScript, reply } from "./script-runner";

/**
 * Scripts more than one store runs, defined once (shared/redis/scripts/<file>.lua: each header names its keys
 * and arguments).
 */

/** SET unless the writer's lease moved on; false when the fence refused it. */
export const FENCED_SET = defineScript({
  file: "fenced-set",
  keys: ["target", "lease"],
  args: ["value", "fenceValue"],
  decode: reply.flag,
});

/** HSET of field/value pairs (`restArgs`) unless the writer's lease moved on; false when the fence refused it. */
export const FENCED_HSET = defineScript({
  file: "fenced-hset",
  keys: ["target", "lease"],
  args: ["fenceValue"],
  restArgs: true,
  decode: reply.flag,
});

/** DEL while the key still holds `expected`; false when it held something else or nothing. */
export const DELETE_IF_EQUAL = defineScript({
  file: "delete-if-equal",
  keys: ["target"],
  args: ["expected"],
  decode: reply.flag,
});
