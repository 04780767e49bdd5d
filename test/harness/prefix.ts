import { randomUUID } from "node:crypto";

/** A fresh Redis key prefix (and BullMQ prefix) per test, so tests sharing one redis-server never see each other's keys. */
export function uniquePrefix(): string {
  return `t${randomUUID().replace(/-/g, "").slice(0, 12)}`;
}
