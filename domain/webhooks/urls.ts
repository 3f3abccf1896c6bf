/**
 * Where a brand may point a webhook endpoint (issue 32, point 5), checked at creation and on every
 * change of the URL: https only, and a host that is not, and does not resolve to, a private,
 * loopback, link-local, metadata or otherwise special address, unless the operator allows them
 * (WEBHOOK_ALLOW_PRIVATE_URLS: tests and local use, where http:// is allowed too). The sender
 * checks again at every connection (DNS may answer otherwise later). A host that does not resolve
 * now is accepted: DNS failures pass, and the connection is checked anyway.
 */
import { firstRefused, literalAddress, type Resolver } from '../../core/outbound-address.js';
import { refused } from '../errors.js';

export interface UrlPolicy {
  allowPrivate: boolean;
  resolve: Resolver;
}

/** Throws the webhook_url_refused refusal when the URL may not be sent to. */
export async function checkEndpointUrl(text: string, policy: UrlPolicy): Promise<void> {
  const url = new URL(text);
  if (policy.allowPrivate) return;
  if (url.protocol !== 'https:') throw refused({ reason: 'webhook_url_refused', why: 'not_https' });
  const literal = literalAddress(url.hostname);
  const addresses = literal ? [literal] : await policy.resolve(url.hostname).catch(() => [] as string[]);
  const bad = firstRefused(addresses);
  if (bad) throw refused({ reason: 'webhook_url_refused', why: 'address', host: literal ?? url.hostname, address: bad.address, addressClass: bad.class });
}
