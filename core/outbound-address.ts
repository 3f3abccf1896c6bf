/**
 * Which addresses the service may send a brand's webhooks to (issue 32, point 5): public unicast
 * only. Private, loopback, link-local and cloud metadata addresses, and every other special range
 * (unspecified, multicast, reserved, the IPv6 forms that embed an IPv4 address), are refused at an
 * endpoint's creation and again when a connection is opened (processors/webhooks/sender.ts), unless
 * the operator allows them (WEBHOOK_ALLOW_PRIVATE_URLS, tests and local use). The ranges are
 * ipaddr.js's; only the names given to a refusal are ours.
 */
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export type RefusedClass = 'private' | 'loopback' | 'link-local' | 'metadata' | 'reserved';

/** Cloud instance metadata services, named apart from their ranges (link-local, unique local, shared). */
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254']);

const CLASS_OF_RANGE: Record<string, RefusedClass> = {
  private: 'private',
  uniqueLocal: 'private',
  carrierGradeNat: 'private',
  loopback: 'loopback',
  linkLocal: 'link-local',
};

/** Why an address is refused, or undefined for a public unicast address. A string that is no address is 'reserved'. */
export function refusedClass(address: string): RefusedClass | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // An IPv4-mapped IPv6 address (::ffff:10.0.0.1) is judged as the IPv4 address it carries.
    parsed = ipaddr.process(address.replace(/^\[|\]$/g, ''));
  } catch {
    return 'reserved';
  }
  if (METADATA.has(parsed.toNormalizedString()) || METADATA.has(parsed.toString())) return 'metadata';
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  return CLASS_OF_RANGE[range] ?? 'reserved';
}

/** A host's addresses (every one of them: a name answering both a public and a private one is refused). */
export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** The host of a URL as an address, when it is one (brackets of IPv6 removed); undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : undefined;
}

/** The first refused address among a host's, with its class. */
export function firstRefused(addresses: readonly string[]): { address: string; class: RefusedClass } | undefined {
  for (const address of addresses) {
    const found = refusedClass(address);
    if (found) return { address, class: found };
  }
  return undefined;
}
