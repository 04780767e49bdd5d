import type Joi from "joi";

/** The parts of Joi's schema description this file walks. */
interface Description {
  readonly type?: string;
  readonly keys?: Record<string, Description>;
  readonly patterns?: ReadonlyArray<{ readonly rule?: Description }>;
  readonly items?: readonly Description[];
  readonly matches?: ReadonlyArray<{ readonly schema?: Description }>;
}

/**
 * The keys the schema allows in the object at `path` (array indexes and chain ids included), or an empty list
 * where the object's keys are patterns only (chainConfig's chain ids). Walks the schema's description, so the
 * list can never drift from the schema itself.
 */
export function knownKeysAt(schema: Joi.Schema, path: ReadonlyArray<string | number>): string[] {
  let node: Description | undefined = objectOf(schema.describe() as Description);
  for (const part of path) {
    node = node === undefined ? undefined : objectOf(childOf(node, part));
  }
  return Object.keys(node?.keys ?? {});
}

function childOf(node: Description, part: string | number): Description | undefined {
  if (node.type === "array") {
    return node.items?.[0];
  }
  return node.keys?.[String(part)] ?? node.patterns?.[0]?.rule;
}

/** An alternatives schema (`tls: true | {…}`) stands for its object branch where a key was found in it. */
function objectOf(node: Description | undefined): Description | undefined {
  if (node?.type !== "alternatives") {
    return node;
  }
  return node.matches?.map((m) => m.schema).find((s) => s?.type === "object") ?? node;
}

/**
 * The known key nearest to `key`: letter case ignored first (`redisURL` → `redisUrl`), then the fewest edits.
 * Undefined when there is no candidate.
 */
export function closestKey(key: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance =
      candidate.toLowerCase() === key.toLowerCase() ? 0 : 1 + editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `unknown key (did you mean \`redisUrl\`?)`: a near miss is named as such, a far one as the nearest key. */
export function unknownKeyMessage(key: string, candidates: readonly string[]): string {
  const closest = closestKey(key, candidates);
  if (closest === undefined) {
    return "unknown key";
  }
  const near = editDistance(key.toLowerCase(), closest.toLowerCase()) <= Math.max(2, Math.floor(key.length / 3));
  return near ? `unknown key (did you mean \`${closest}\`?)` : `unknown key (the closest known key is \`${closest}\`)`;
}

/** Levenshtein distance: insertions, deletions and substitutions of one character each cost 1. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j] + 1, current[j - 1] + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length];
}
