/**
 * Whether the admin API is open to the network: a listen address other than loopback with admin
 * authentication off lets anyone who reaches the port read and change the gateway's configuration.
 */
import { isIP } from "node:net";

/** True for addresses only this machine can reach: localhost, 127.0.0.0/8 and ::1 (also IPv4-mapped). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === "localhost") return true;
  const v4 = bare.toLowerCase().startsWith("::ffff:") ? bare.slice(7) : bare;
  if (isIP(v4) === 4) return v4.startsWith("127.");
  return isIP(bare) === 6 && /^(0{0,4}:){7}0{0,3}1$|^::1$/.test(bare);
}

/** The risk of listening on `host` with admin authentication as given, or null when there is none. */
export function unauthenticatedExposure(host: string, authEnabled: boolean): string | null {
  if (authEnabled || isLoopbackHost(host)) return null;
  return (
    `listening on ${host}, which is not a loopback address, with admin authentication off: anyone who can reach the port ` +
    `can read and change providers, virtual keys, MCP clients and settings through the admin API; ` +
    `set auth_config.is_enabled with admin_username and admin_password, or listen on 127.0.0.1`
  );
}
