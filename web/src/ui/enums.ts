/** The REST spelling of an enum value (lowercase suffix), the same rule the API's JSON uses. */

/** `ClientState.NEEDS_REAUTH` (value 3) of `ClientState` -> "needs_reauth"; 0 reads as "unspecified". */
export function enumWord(values: Record<number, string>, value: number): string {
  return (values[value] ?? "unspecified").toLowerCase();
}
