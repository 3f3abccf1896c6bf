import { createHmac, timingSafeEqual } from 'node:crypto';

/** The processor's own tolerance: a signature older or newer than this is refused (replay). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'stale' | 'mismatch' | 'no_secret' };

/**
 * Checks a `Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]` header: HMAC-SHA256 with any of the
 * secrets over `<t>.<raw body bytes>`, compared in constant time, t within the tolerance of now.
 */
export function checkSignature(rawBody: Buffer, header: string | undefined, secrets: readonly string[], nowSeconds: number): SignatureCheck {
  if (secrets.length === 0) return { ok: false, reason: 'no_secret' };
  if (!header) return { ok: false, reason: 'missing' };
  let timestamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(Buffer.from(value, 'hex'));
  }
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp) || signatures.length === 0) return { ok: false, reason: 'malformed' };
  if (Math.abs(nowSeconds - Number(timestamp)) > SIGNATURE_TOLERANCE_SECONDS) return { ok: false, reason: 'stale' };
  const prefix = Buffer.from(`${timestamp}.`, 'utf8');
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(prefix).update(rawBody).digest();
    // Every candidate is compared (no early exit on the first byte): timingSafeEqual on equal lengths.
    if (signatures.some((s) => timingSafeEqual(s, expected))) return { ok: true };
  }
  return { ok: false, reason: 'mismatch' };
}
