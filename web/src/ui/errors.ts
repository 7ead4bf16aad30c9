/** Turns any failure of a call into the sentence the API gave. */
import { ConnectError } from "@connectrpc/connect";

/** The message of an API error (the server's own wording), or a generic one for anything else. */
export function errorMessage(err: unknown): string {
  if (err instanceof ConnectError) return err.rawMessage;
  if (err instanceof Error) return err.message;
  return "the request failed";
}
