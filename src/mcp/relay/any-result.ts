/** The result schema of a relayed request: the relay passes results on as they came, so nothing is checked. */
import { z } from "zod";

/** Accepts any result unchanged (the SDK's Protocol parses every result with the schema it is given). */
export const ANY_RESULT = z.unknown();
