/**
 * The second guard of the audit log (domain/audit/audit.ts): whatever a write hands it, no
 * credential reaches an entry's before or after, by its field's name or by its form.
 */
import { describe, expect, it } from 'vitest';
import { actorOf, REDACTED, redact } from '../../../domain/audit/audit.js';

describe('audit redaction', () => {
  it('replaces credential fields, keeps masked forms and everything else', () => {
    const state = {
      id: 'ep_1',
      secret: 'whsec_abc',
      previous_secret: 'v1.sealed',
      previous_secret_until: new Date('2026-01-02T03:04:05Z'),
      key_hash: 'ab'.repeat(32),
      token_hash: 'cd'.repeat(32),
      token: 'inv_x',
      password: 'p',
      webhook_secret: 'whsec_processor',
      api_token_masked: 'aff_********abcd',
      nested: [{ client_secret: 's', name: 'kept' }],
      none: null,
      skipped: undefined,
    };
    expect(redact(state)).toEqual({
      id: 'ep_1',
      secret: REDACTED,
      previous_secret: REDACTED,
      previous_secret_until: '2026-01-02T03:04:05.000Z',
      key_hash: REDACTED,
      token_hash: REDACTED,
      token: REDACTED,
      password: REDACTED,
      webhook_secret: REDACTED,
      api_token_masked: 'aff_********abcd',
      nested: [{ client_secret: REDACTED, name: 'kept' }],
      none: null,
    });
  });

  it('replaces values in a credential form whatever their field, and keeps look-alikes', () => {
    const key = `aff_${'A'.repeat(32)}`;
    const sealed = `v1.${'B'.repeat(60)}`;
    expect(redact({ note: 'whsec_abcdef', a: key, b: `agt_${'c'.repeat(32)}`, c: `dsh_${'d'.repeat(32)}`, d: sealed })).toEqual({
      note: REDACTED, a: REDACTED, b: REDACTED, c: REDACTED, d: REDACTED,
    });
    // An aff_code a brand chose, a short v1. text: not credentials.
    expect(redact({ aff_code: 'aff_summer', version: 'v1.2' })).toEqual({ aff_code: 'aff_summer', version: 'v1.2' });
  });

  it('names users and agent keys as actors; a program key writes nothing audited', () => {
    expect(actorOf({ kind: 'session', userId: 4 })).toEqual({ type: 'user', id: 4 });
    expect(actorOf({ kind: 'account', userId: 5 })).toEqual({ type: 'user', id: 5 });
    expect(actorOf({ kind: 'agentKey', keyId: '9', workspaceId: 1, scopes: ['audit:read'] })).toEqual({ type: 'agent', id: 9 });
    expect(() => actorOf({ kind: 'programKey', programId: 1, workspaceId: 1, keyId: 'h', rotation: null })).toThrow();
  });
});
