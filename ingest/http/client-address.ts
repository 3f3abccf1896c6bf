import type { FastifyInstance } from 'fastify';
import ipaddr from 'ipaddr.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client as rate limits and the failed-auth throttle count it (see clientAddressKey). */
    readonly clientAddress: string;
  }
}

/** IPv6 clients are counted per /64 unless configured otherwise (RATE_LIMIT_IPV6_PREFIX). */
export const DEFAULT_IPV6_PREFIX = 64;

/**
 * The address a client is counted under: IPv4 as is, an IPv4-mapped IPv6 address as its IPv4, any
 * other IPv6 address as its network of `ipv6Prefix` bits. One subscriber gets a whole /64 (often a
 * /56 or /48), so counting single IPv6 addresses would give each client 2^64 budgets.
 */
export function clientAddressKey(ip: string, ipv6Prefix: number): string {
  if (!ip.includes(':')) return ip;
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.process(ip);
  } catch {
    return ip; // not an address (never from a socket): counted as given
  }
  if (address.kind() === 'ipv4') return address.toString();
  // Masked by hand from the 16-bit parts: the zone of a link-local address is dropped too.
  const parts = (address as ipaddr.IPv6).parts.map((part, i) => {
    const bits = Math.min(16, Math.max(0, ipv6Prefix - i * 16));
    return bits === 0 ? 0 : part & ((0xffff << (16 - bits)) & 0xffff);
  });
  return `${new ipaddr.IPv6(parts).toString()}/${ipv6Prefix}`;
}

/** request.clientAddress on every request of the app. */
export function decorateClientAddress(app: FastifyInstance, ipv6Prefix: number) {
  app.decorateRequest('clientAddress', {
    getter(this: { ip: string }) {
      return clientAddressKey(this.ip, ipv6Prefix);
    },
  });
}
