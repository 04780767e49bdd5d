/**
 * The text a messaging signer personal_signs to get a token (docs/protocol.md#login). Byte-exact: the second
 * line is two spaces, and the prefix ends with ": " so the nonce follows directly. The Connext auth server
 * recovers the signer from exactly this string; one changed byte and every login fails.
 */
export const AUTH_MESSAGE_PREFIX =
  "Hi there from Connext! Sign this message to make sure that no one can communicate on the Connext Network on your behalf. This will not cost you any Ether!\n" +
  "  \n" +
  "To stop hackers from using your wallet, here's a unique message ID that they can't guess: ";

export function authMessage(nonce: string): string {
  return AUTH_MESSAGE_PREFIX + nonce;
}
