/**
 * Exports analytics views (or a query) for a time range to Parquet or CSV files:
 *
 *   npm run export -- --from 2026-11-01 --to 2026-12-01                       # every view, Parquet, ./export/
 *   npm run export -- --tables sales,refunds --format csv --out-dir ~/nov --from 2026-11-01 --to 2026-12-01
 *   npm run export -- --query "SELECT * FROM analytics.sales WHERE occurred_at >= {from:DateTime64(6, 'UTC')} AND occurred_at < {to:DateTime64(6, 'UTC')}" --name nov-sales
 *
 * Same targets, checks and limits as npm run sql (queries/analytics/target.ts).
 */
import { parseArgs } from 'node:util';
import { bar, describeTarget, reportFailure, startProgress } from '../queries/analytics/cli.js';
import { EXPORT_TABLES, runExport, type ExportFormat, type ExportTable } from '../queries/analytics/export.js';
import { chooseTarget, openSqlSession } from '../queries/analytics/target.js';
import { loadConfig } from '../core/config.js';

const usage = `usage: npm run export -- [--tables a,b | --query "SELECT ..." [--name file]] [options]
  --tables <list>      views of the analytics database (default all): ${Object.keys(EXPORT_TABLES).join(', ')}
  --query <sql>        export this query instead; {from:DateTime64(6, 'UTC')} and {to:...} are bound to the range
  --from, --to         the UTC range [from, to) on each view's own time (default: all time)
  --format parquet|csv (default parquet)
  --out-dir <dir>      (default ./export); one file per view: <dir>/<view>.<format>
  --direct             open the stopped service's data directory (refused while it runs)`;

function time(value: string | undefined, fallback: Date, flag: string): Date {
  if (value === undefined) return fallback;
  const date = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(date.getTime())) throw new Error(`${flag} takes a date (2026-11-01) or an ISO 8601 time, got ${JSON.stringify(value)}`);
  return date;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tables: { type: 'string' },
      query: { type: 'string' },
      name: { type: 'string', default: 'query' },
      from: { type: 'string' },
      to: { type: 'string' },
      format: { type: 'string', default: 'parquet' },
      'out-dir': { type: 'string', default: './export' },
      direct: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (values.format !== 'parquet' && values.format !== 'csv') throw new Error(`--format must be parquet or csv\n${usage}`);
  if (values.tables && values.query) throw new Error(`--tables or --query, not both\n${usage}`);
  if (!/^[A-Za-z0-9._-]+$/.test(values.name)) throw new Error('--name is a file name: letters, digits, . _ -');
  const tables = (values.tables ?? Object.keys(EXPORT_TABLES).join(',')).split(',').map((t) => t.trim()).filter(Boolean);
  const unknown = tables.filter((t) => !(t in EXPORT_TABLES));
  if (unknown.length) throw new Error(`Unknown view ${unknown.join(', ')}; the views are ${Object.keys(EXPORT_TABLES).join(', ')}`);
  const range = { from: time(values.from, new Date('1970-01-01T00:00:00Z'), '--from'), to: time(values.to, new Date('2200-01-01T00:00:00Z'), '--to') };

  const config = loadConfig();
  const target = await chooseTarget(config, { direct: values.direct });
  const session = await openSqlSession(target);
  process.stderr.write(`exporting from ${describeTarget(target)}\n`);
  let current = 'counting rows';
  const stop = startProgress(() => current);
  try {
    const files = await runExport(
      session,
      {
        what: values.query ? { query: values.query, name: values.name } : { tables: tables as ExportTable[] },
        range,
        format: values.format as ExportFormat,
        outDir: values['out-dir'],
      },
      config.analytics.limits,
      ({ file, doneRows, totalRows, finished }) => {
        current = `${bar(doneRows, totalRows)} rows ${finished ? 'written' : 'writing'} ${file}`;
        process.stderr.write(`${current}\n`);
      },
    );
    stop();
    for (const f of files) process.stdout.write(`${f.file}\t${f.rows} rows\t${f.bytes} bytes\n`);
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
