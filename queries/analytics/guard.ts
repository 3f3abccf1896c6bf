/**
 * What makes an analyst's query safe to run in the service's own warehouse, decided by ClickHouse
 * rather than by a lexer of ours. Every step runs in a read-only session of the engine
 * (Warehouse.readOnly: `readonly = 1` and the time and memory limits, set for the connection or
 * the request, never in a query's text):
 *   1. the engine's parser reads the text as exactly one statement: `formatQuery`, the text bound
 *      as a parameter, refuses a second statement ("Multi-statements are not allowed") and answers
 *      the canonical text of the one it parsed (heredocs, comments, quoting all resolved); only
 *      that text is used from then on, never the analyst's;
 *   2. `EXPLAIN AST` of the canonical text: a SELECT only; no FORMAT, INTO OUTFILE or SETTINGS,
 *      the last at no depth (ClickHouse 26.7 applies a subquery's SETTINGS even under
 *      readonly = 1); no function that reads files, URLs or other servers (readonly does not stop
 *      the function file(), and sqlite() creates its file before readonly refuses it);
 *   3. the canonical text runs as it is, ClickHouse writing the answer in the chosen format.
 *      readonly = 1 refuses writes, DDL and the external table functions there too, and the
 *      analyst user of the distributed mode holds no grant beyond SELECT on analytics.*.
 */
import { sql, type NamedQuery } from '../../core/sql.js';
import type { ReadOnlySession } from '../../core/warehouse.js';

export type RefusalReason =
  | 'empty'
  | 'multiple_statements'
  | 'not_a_select'
  | 'settings_clause'
  | 'format_clause'
  | 'into_outfile'
  | 'external_access';

/** A query refused before it ran; the message says why and what to do instead. */
export class QueryRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'QueryRefused';
  }
}

/** A query ClickHouse refused or could not finish (limit reached, syntax, unknown table...). */
export class QueryFailed extends Error {
  constructor(
    message: string,
    readonly limit: 'time' | 'memory' | undefined,
  ) {
    super(message);
    this.name = 'QueryFailed';
  }
}

export interface QueryLimits {
  maxExecutionSeconds: number;
  maxMemoryBytes: number;
}

/** Output formats, each produced by ClickHouse itself. */
export const OUTPUT_FORMATS = {
  table: 'PrettyCompactMonoBlock',
  csv: 'CSVWithNames',
  jsonl: 'JSONEachRow',
  parquet: 'Parquet',
} as const;
export type OutputFormat = keyof typeof OUTPUT_FORMATS;

/** The refusals' words, shared with run.ts where the engine itself refuses. */
export const MESSAGES = {
  empty: 'The query is empty.',
  multipleStatements: 'Only one statement per query: remove what follows the `;`.',
  notASelect: 'Only SELECT queries are accepted (read-only access)',
  settings: 'SETTINGS clauses are not accepted: the time and memory limits are set by the service (SQL_MAX_EXECUTION_SECONDS, SQL_MAX_MEMORY_BYTES).',
  format: 'Remove the FORMAT clause: choose the output with --format table|csv|jsonl|parquet.',
  intoOutfile: 'INTO OUTFILE is not accepted: the query may not write files. Use --out <file> (or npm run export).',
} as const;

/**
 * Table functions that only compute from their arguments or read this warehouse's own tables,
 * and that readonly = 1 lets run. Every other table function (file, url, s3, postgresql, remote,
 * executable, sqlite...) reads outside the warehouse or needs a temporary table (format, zeros,
 * loop), as do the ordinary functions `file` and `catboostEvaluate` (a model file).
 */
const SAFE_TABLE_FUNCTIONS = new Set(['numbers', 'numbers_mt', 'values', 'generate_series', 'generateseries', 'generaterandom', 'primes', 'view', 'null', 'merge']);
const ALWAYS_EXTERNAL = [
  'file', 'filecluster', 'url', 'urlcluster', 's3', 's3cluster', 'gcs', 'azureblobstorage', 'hdfs', 'postgresql', 'mysql',
  'mongodb', 'redis', 'sqlite', 'jdbc', 'odbc', 'remote', 'remotesecure', 'cluster', 'clusterallreplicas', 'executable',
  'python', 'iceberg', 'deltalake', 'hudi', 'input', 'dictionary', 'catboostevaluate',
];

const parseQuery = sql('analytics.parse', `SELECT formatQuery({query:String})`);
const tableFunctionsQuery = sql('analytics.table_functions', `SELECT lower(name) FROM system.table_functions`);

const engineMessage = (error: unknown) => ((error as { message?: string }).message ?? String(error)).trim();

/** Step 1: the canonical text of the one statement ClickHouse's parser reads in `text`. */
export async function canonicalQuery(session: ReadOnlySession, text: string): Promise<string> {
  if (!text.trim()) throw new QueryRefused('empty', MESSAGES.empty);
  try {
    return (await session.bytes(parseQuery, { query: text }, 'RawBLOB')).toString('utf8');
  } catch (error) {
    const message = engineMessage(error);
    if (/Multi-statements are not allowed/.test(message)) throw new QueryRefused('multiple_statements', MESSAGES.multipleStatements);
    if (/Empty query/.test(message)) throw new QueryRefused('empty', MESSAGES.empty);
    if ((error as { type?: string }).type === 'SYNTAX_ERROR') {
      // The engine's words, without the formatQuery(...) call that carried the text.
      throw new QueryFailed(`Not a valid query: ${message.replace(/:? In scope SELECT formatQuery\([\s\S]*$/, '')}`, undefined);
    }
    throw error;
  }
}

/** The names (lower case) of functions that read outside the warehouse, from this engine's own list. */
async function externalFunctions(session: ReadOnlySession): Promise<Set<string>> {
  // A server may keep system tables from a restricted user (select_from_system_db_requires_grant):
  // then the fixed list, and the engine's readonly and the user's missing source grants, remain.
  const names = await session.bytes(tableFunctionsQuery, {}, 'TabSeparatedRaw').then(
    (bytes) => bytes.toString('utf8').split('\n').filter(Boolean),
    () => [] as string[],
  );
  return new Set([...names.filter((name) => !SAFE_TABLE_FUNCTIONS.has(name)), ...ALWAYS_EXTERNAL]);
}

/** `<indent><node>[ <name>]` of an EXPLAIN AST line (TabSeparated: a literal's newline stays escaped). */
const AST_LINE = /^( *)(\S+)(?: (\S+))?/;

/** Step 2: ClickHouse's parser reads the canonical text; anything but a plain SELECT is refused. */
async function checkAst(session: ReadOnlySession, canonical: string, params: Record<string, unknown>): Promise<void> {
  const explain = sql('analytics.explain', `EXPLAIN AST\n${canonical}`);
  const ast = await session.bytes(explain, params, 'TabSeparated').then(
    (bytes) => bytes.toString('utf8').split('\n').filter(Boolean),
    (error: unknown) => {
      // Every SELECT explains: a statement the EXPLAIN grammar does not take is something else.
      if ((error as { type?: string }).type === 'SYNTAX_ERROR') throw new QueryRefused('not_a_select', `${MESSAGES.notASelect}.`);
      throw error;
    },
  );
  const root = AST_LINE.exec(ast[0] ?? '');
  if (root?.[2] !== 'SelectWithUnionQuery') {
    throw new QueryRefused('not_a_select', `${MESSAGES.notASelect}; found ${root?.[2]?.replace(/Query$/, '') ?? 'another statement'}.`);
  }
  const nodes = ast.slice(1).map((line) => {
    const [, indent = '', node = '', name = ''] = AST_LINE.exec(line) ?? [];
    return { depth: indent.length, node, name };
  });
  // Beside the SELECT list only the output options stand under the root: INTO OUTFILE's literals,
  // FORMAT's name, SETTINGS.
  const options = nodes.filter((n) => n.depth === 1 && n.node !== 'ExpressionList');
  if (options.some((n) => n.node === 'Literal')) throw new QueryRefused('into_outfile', MESSAGES.intoOutfile);
  if (options.some((n) => n.node === 'Identifier')) throw new QueryRefused('format_clause', MESSAGES.format);
  if (nodes.some((n) => n.node === 'Set')) throw new QueryRefused('settings_clause', MESSAGES.settings);
  if (options.length) throw new QueryRefused('not_a_select', 'Only a plain SELECT is accepted (no INTO OUTFILE, SETTINGS or FORMAT clause).');
  const external = await externalFunctions(session);
  const reader = nodes.find((n) => n.node === 'Function' && external.has(n.name.toLowerCase()));
  if (reader) {
    throw new QueryRefused('external_access', `${reader.name}() is not accepted: queries may read the warehouse only, not files, URLs or other databases.`);
  }
}

/**
 * Checks an analyst's query in the read-only session and returns what to run there: the engine's
 * canonical text of it, which the session answers in the chosen format.
 */
export async function prepareQuery(session: ReadOnlySession, text: string, params: Record<string, unknown> = {}): Promise<NamedQuery> {
  const canonical = await canonicalQuery(session, text);
  await checkAst(session, canonical, params);
  return sql('analytics.query', canonical);
}
