/** A parsed JSON object (not null, not an array): what a config level must be before its keys are read. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
