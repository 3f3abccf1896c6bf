/**
 * Ad-hoc, read-only SQL on the warehouse (docs/analytics.md lists the tables):
 *
 *   npm run sql -- "SELECT currency, sum(amount) FROM analytics.sales WHERE NOT is_test GROUP BY currency"
 *   npm run sql -- --format csv --param month=2026-11-01 --file top-partners.sql > top.csv
 *   npm run sql -- --format parquet --out sales.parquet "SELECT * FROM analytics.sales"
 *
 * The query goes to the running service's SQL endpoint, to the stopped service's data directory,
 * or to CLICKHOUSE_URL (queries/analytics/target.ts).
 */
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { describeTarget, reportFailure, startProgress } from '../queries/analytics/cli.js';
import { OUTPUT_FORMATS, type OutputFormat } from '../queries/analytics/guard.js';
import { chooseTarget, openSqlSession } from '../queries/analytics/target.js';
import { loadConfig } from '../core/config.js';

const usage = `usage: npm run sql -- [options] "SELECT ..."   (or --file query.sql, or - for stdin)
  --format table|csv|jsonl|parquet   output (default table; parquet needs --out)
  --out <file>                       write the answer to a file instead of stdout
  --param name=value                 a value for a {name:Type} placeholder (repeatable)
  --direct                           open the stopped service's data directory (refused while it runs)
  --max-seconds <n>, --max-memory <bytes>   tighter limits than SQL_MAX_EXECUTION_SECONDS / SQL_MAX_MEMORY_BYTES`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      format: { type: 'string', default: 'table' },
      out: { type: 'string' },
      param: { type: 'string', multiple: true, default: [] },
      file: { type: 'string' },
      direct: { type: 'boolean', default: false },
      'max-seconds': { type: 'string' },
      'max-memory': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (!(values.format in OUTPUT_FORMATS)) throw new Error(`--format must be one of ${Object.keys(OUTPUT_FORMATS).join(', ')}\n${usage}`);
  const format = values.format as OutputFormat;
  if (format === 'parquet' && !values.out) throw new Error('Parquet is binary: give --out <file>.parquet');
  const query = values.file
    ? await readFile(values.file, 'utf8')
    : positionals[0] === '-'
      ? readFileSync(0, 'utf8')
      : positionals.join(' ');
  if (!query.trim()) throw new Error(usage);
  const params: Record<string, string> = {};
  for (const pair of values.param) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`--param takes name=value, got ${JSON.stringify(pair)}`);
    params[pair.slice(0, at)] = pair.slice(at + 1);
  }

  const config = loadConfig();
  const limits = {
    maxExecutionSeconds: Math.min(Number(values['max-seconds'] ?? Infinity), config.analytics.limits.maxExecutionSeconds),
    maxMemoryBytes: Math.min(Number(values['max-memory'] ?? Infinity), config.analytics.limits.maxMemoryBytes),
  };
  if (!(limits.maxExecutionSeconds > 0) || !(limits.maxMemoryBytes > 0)) throw new Error('--max-seconds and --max-memory take positive numbers');
  const target = await chooseTarget(config, { direct: values.direct });
  const session = await openSqlSession(target);
  const started = Date.now();
  const stop = startProgress(() => `running on ${describeTarget(target)}:`);
  try {
    const bytes = await session.run({ query, params, format }, limits);
    stop();
    if (values.out) await writeFile(values.out, bytes);
    else process.stdout.write(bytes);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stderr.write(`${values.out ? `${bytes.length} bytes written to ${values.out}, ` : ''}${seconds} s on ${describeTarget(target)}\n`);
    return 0;
  } finally {
    stop();
    await session.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => process.exit(reportFailure(error)),
);
