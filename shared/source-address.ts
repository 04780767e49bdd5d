/**
 * Who sent a request, as a key for limits a stranger must not be able to set for someone else: the TCP source
 * address (never a header or a body field), IPv4-mapped IPv6 as IPv4, other IPv6 by its /64 (one host's usual
 * share, so rotating addresses inside it gains nothing).
 */
export function sourceAddressKey(remoteAddress: string | undefined): string {
  const raw = remoteAddress ?? "unknown";
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(raw);
  if (v4) {
    return v4[1];
  }
  if (!raw.includes(":")) {
    return raw;
  }
  const [head, tail] = raw.split("::");
  const groupsOf = (part: string | undefined): string[] => (part ? part.split(":") : []);
  const zeros = Array<string>(Math.max(0, 8 - groupsOf(head).length - groupsOf(tail).length)).fill("0");
  const groups = tail === undefined ? groupsOf(head) : [...groupsOf(head), ...zeros, ...groupsOf(tail)];
  return `${groups.slice(0, 4).join(":")}::/64`;
}
