/** The one error of reading client JSON into a message: a 400 that names where the bad value was. */
import { GatewayError } from "../errors.js";

/** A 400 for input that cannot become a request message; `field` is the full path of the bad value. */
export function invalidRequest(message: string, field?: string): GatewayError {
  return new GatewayError("invalid_argument", message, {
    type: "invalid_request",
    httpStatus: 400,
    ...(field === undefined ? {} : { field }),
  });
}
