/**
 * A named, parameterized statement, for Postgres (core/db.ts) and the warehouse (core/warehouse.ts)
 * alike. The name is prepended as a comment so every query can be found in the database logs,
 * pg_stat_statements and ClickHouse's query log, and doubles as Postgres's prepared-statement name.
 */
export interface NamedQuery {
  readonly name: string;
  readonly text: string;
}

export function sql(name: string, text: string): NamedQuery {
  return { name, text: `/* ${name} */ ${text.trim()}` };
}
