/**
 * The address of the TCP peer a call came from, carried to the services in a request header that the
 * HTTP layer always overwrites with the socket's own address, so a client cannot choose its value.
 */

/** Request header holding the socket's remote address; whatever a client sent under this name is replaced. */
export const PEER_ADDRESS_HEADER = "gw-peer-address";

/** The remote address of a socket, or "unknown" when the socket is already gone. */
export function socketPeerAddress(socket: { remoteAddress?: string | undefined } | null | undefined): string {
  return socket?.remoteAddress ?? "unknown";
}
