/**
 * The HTTP status an RPC's outcome maps to, kept on its response for http_requests_total. gRPC and
 * gRPC-Web answer every call, failed or not, with HTTP 200 and carry the outcome in trailers (and the
 * Connect protocol does the same for streams), so the status on the wire says nothing about the call.
 */
import { Code } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import type { Res } from "./node-http.js";

const rpcStatus = Symbol("gw.rpcStatus");

/** A response that may carry the status of its RPC's outcome. */
interface WithRpcStatus {
  [rpcStatus]?: number;
}

/** Records that the RPC answered on `res` ended with `code` (a gRPC status number; 0 is OK). */
export function setRpcOutcome(res: Res, code: number): void {
  // An OK call keeps the status on the wire (200); an unknown code number counts as Code.Unknown.
  if (code === 0) return;
  (res as WithRpcStatus)[rpcStatus] = codeToHttpStatus(code in Code ? (code as Code) : Code.Unknown);
}

/** The status to count for `res`: its RPC outcome's when one was recorded, else the status it was sent with. */
export function countedStatus(res: Res): number {
  return (res as WithRpcStatus)[rpcStatus] ?? res.statusCode;
}
