/**
 * A distinct client address per request, so the service's per-IP limits stay out of the way: the
 * service trusts X-Forwarded-For from the loopback load generator (TRUST_PROXY=127.0.0.1). The
 * addresses are 10.x.y.z from a counter, the formula bench/wrk.ts's Lua script uses from its ipBase.
 */
export function ipOf(n: number): string {
  return `${10 + Math.floor(n / 16_777_216)}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export interface ClientIps {
  /** The counter: addresses up to ipOf(used) are taken. A wrk run starts at it and moves it past what it used. */
  used: number;
  next(): string;
}

export function clientIps(): ClientIps {
  return {
    used: 0,
    next() {
      this.used += 1;
      return ipOf(this.used);
    },
  };
}
