/** The Basic authorization header the operator surfaces (/metrics, /admin/queues) take: any user, the admin token. */
export function basicAuth(token: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`sre:${token}`).toString("base64")}` };
}
