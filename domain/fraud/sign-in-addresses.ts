/**
 * The client addresses a partner signed into the portal from (partner-program.md, "Fraud review":
 * the partner_ip rule flags a commission whose click came from one of them). The portal's sign-in
 * records each one; record_sale's fraud_flags reads them by (partner_id, client_ip).
 */
import ipaddr from 'ipaddr.js';
import { sql, type Queryable } from '../../core/db.js';

const q = {
  record: sql(
    'fraud.record_sign_in_address',
    `INSERT INTO partner_sign_in_addresses (partner_id, client_ip) VALUES ($1, $2::inet)
     ON CONFLICT (partner_id, client_ip) DO UPDATE SET sign_ins = partner_sign_in_addresses.sign_ins + 1, last_seen_at = now()`,
  ),
};

export interface SignInAddress {
  partnerId: number;
  /** request.ip, or request.clientAddress (an IPv6 client's /64 network): either is matched with the clicks'. */
  clientIp: string;
}

/** The address as Postgres's inet takes it: an IPv4-mapped IPv6 address as IPv4, no zone; undefined when it is none. */
export function inetText(ip: string): string | undefined {
  try {
    if (ip.includes('/')) {
      const [address, bits] = ipaddr.parseCIDR(ip);
      return `${address.toString()}/${bits}`;
    }
    return ipaddr.process(ip.replace(/%.*$/, '')).toString();
  } catch {
    return undefined;
  }
}

/**
 * Notes that the partner signed in from this address (call it in the sign-in's transaction). An
 * address that is none (never from a socket) is not recorded: the answer says whether it was.
 */
export async function recordPartnerSignInAddress(db: Queryable, { partnerId, clientIp }: SignInAddress): Promise<boolean> {
  const ip = inetText(clientIp);
  if (ip === undefined) return false;
  await db.many(q.record, [partnerId, ip]);
  return true;
}
