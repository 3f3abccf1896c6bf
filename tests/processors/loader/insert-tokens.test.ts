import { describe, expect, it } from 'vitest';
import { insertTokens, type LogRange } from '../../../processors/loader/insert-tokens.js';

const batch = (topic: string, first: number, values: string[]): LogRange => ({
  topic,
  partition: 2,
  messages: values.map((v, i) => ({ offset: String(first + i), value: Buffer.from(v) })),
});

describe('insert tokens', () => {
  it('one batch: its place in the log, a hash of its bytes and the table; the same range redelivered gives the same token', () => {
    const token = insertTokens([batch('tracking.clicks.v1', 10, ['a', 'b'])]);
    expect(token('click_recorded')).toMatch(/^tracking\.clicks\.v1\/2\/10-11\/[0-9a-f]{32}\/click_recorded$/);
    expect(insertTokens([batch('tracking.clicks.v1', 10, ['a', 'b'])])('click_recorded')).toBe(token('click_recorded'));
    expect(token('sales_current')).not.toBe(token('click_recorded'));
  });

  it('the same range with other bytes (a recreated topic) never takes the same token', () => {
    const before = insertTokens([batch('tracking.clicks.v1', 0, ['a', 'b'])])('click_recorded');
    const after = insertTokens([batch('tracking.clicks.v1', 0, ['a', 'c'])])('click_recorded');
    expect(after).not.toBe(before);
    expect(after.split('/').slice(0, 3)).toEqual(before.split('/').slice(0, 3));
  });

  it('what else the rows depend on is part of the token', () => {
    const token = insertTokens([batch('tracking.sales.v1', 0, ['a'])]);
    expect(token('performance_facts', 'f00d')).toBe(token('performance_facts').replace('/performance_facts', '.f00d/performance_facts'));
  });

  it('batches loaded together are named by their ranges, in their order', () => {
    const clicks = batch('tracking.clicks.v1', 0, ['a']);
    const sales = batch('tracking.sales.v1', 5, ['b']);
    const token = insertTokens([clicks, sales]);
    expect(token('click_recorded')).toMatch(/^combined\/[0-9a-f]{32}\/[0-9a-f]{32}\/click_recorded$/);
    expect(insertTokens([clicks, sales])('click_recorded')).toBe(token('click_recorded'));
    expect(insertTokens([sales, clicks])('click_recorded')).not.toBe(token('click_recorded'));
  });
});
