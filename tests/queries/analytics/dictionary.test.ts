/**
 * docs/analytics.md is what the warehouse says about the analytics views: regenerated from a
 * fresh warehouse and compared, so a changed view or COMMENT without `npm run docs:analytics`
 * fails here. Every column carries a comment.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DICTIONARY_PATH, dictionaryFromMigrations } from '../../../queries/analytics/dictionary.js';

const FACTS = ['clicks', 'customers', 'sales', 'refunds', 'commissions', 'platform_fees', 'partner_programs', 'test_events'];

describe('the data dictionary of the analytics views', () => {
  it('docs/analytics.md is the one the migrations produce (run npm run docs:analytics when this fails)', async () => {
    const generated = await dictionaryFromMigrations();
    expect(await readFile(DICTIONARY_PATH, 'utf8')).toBe(generated);
    for (const fact of FACTS) expect(generated).toContain(`## analytics.${fact}\n`);
    // A column row whose meaning is empty ends with `| |`.
    const columnRows = generated.split('\n').filter((line) => /^\| `[a-z_]+` \| `/.test(line));
    expect(columnRows.length).toBeGreaterThan(60);
    expect(columnRows.filter((line) => /\|\s*\|$/.test(line))).toEqual([]);
    // Money: minor units, currency and a decimal side by side wherever an amount appears.
    for (const fact of ['sales', 'refunds', 'commissions', 'platform_fees']) {
      const section = generated.split(`## analytics.${fact}\n`)[1]!.split('\n## ')[0]!;
      expect(section).toContain('| `amount_minor` | `Int64` |');
      expect(section).toContain('| `currency` |');
      expect(section).toContain('| `amount` | `Decimal(18, 2)` |');
      expect(section).toContain('| `is_test` | `Bool` |');
    }
  });
});
