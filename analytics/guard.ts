/**
 * What makes an analyst's query safe to run in the service's own warehouse: read-only, one
 * statement, nothing read from files or URLs, nothing written to files, the limits of the
 * configuration. Three layers, each catching what the one before cannot:
 *   1. a lexical pass (strings, quoted names, comments skipped) that finds the statement's end:
 *      chDB runs every statement of a multi-statement text, so a second statement must never
 *      reach it, not even inside EXPLAIN;
 *   2. ClickHouse's own parser (EXPLAIN AST): only a SELECT, no SETTINGS clause anywhere (a
 *      subquery's SETTINGS could lift the limits), no function that reads files, URLs or other
 *      databases;
 *   3. ClickHouse's own enforcement: the query runs wrapped in `SETTINGS readonly = 1` (writes and
 *      external table functions refused by the engine) with max_execution_time and
 *      max_memory_usage.
 */
import { sql, type NamedQuery } from '../core/db.js';

export type RefusalReason =
  | 'empty'
  | 'unbalanced'
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

interface Token {
  /** Upper-cased bare word, or the punctuation character; quoted names and literals are `"` and `'`. */
  text: string;
  depth: number;
  /** The character right after the token, ignoring blanks (to tell `format(` from `FORMAT`). */
  next: string;
  prev: string;
}

/**
 * Splits off comments and literals and returns the statement without a trailing `;`. Where the
 * lexer and ClickHouse could disagree it errs towards seeing a `;` (a `#` is not taken as a
 * comment here), so a disagreement refuses a query, never lets a second statement through.
 */
export function singleStatement(text: string): { statement: string; tokens: Token[] } {
  const tokens: Token[] = [];
  let depth = 0;
  let end = -1;
  let i = 0;
  const n = text.length;
  const push = (t: string, at: number) => {
    let j = at;
    while (j < n && /\s/.test(text[j]!)) j++;
    const prev = tokens.length ? tokens[tokens.length - 1]!.text : '';
    tokens.push({ text: t, depth, next: text[j] ?? '', prev });
  };
  while (i < n) {
    const c = text[i]!;
    if (end >= 0 && !/\s/.test(c) && !(c === '-' && text[i + 1] === '-') && !(c === '/' && text[i + 1] === '*')) {
      throw new QueryRefused('multiple_statements', 'Only one statement per query: remove what follows the `;`.');
    }
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && text[i + 1] === '-') {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      // ClickHouse nests block comments.
      let level = 0;
      do {
        if (text[i] === '/' && text[i + 1] === '*') {
          level++;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          level--;
          i += 2;
        } else i++;
      } while (level > 0 && i < n);
    } else if (c === "'" || c === '"' || c === '`') {
      i++;
      while (i < n && text[i] !== c) i += text[i] === '\\' ? 2 : 1;
      i++;
      // '' inside a string is an escaped quote: the loop simply reads the next literal on.
      push(c === "'" ? "'" : '"', i);
    } else if (c === ';') {
      if (end < 0) end = i;
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const start = i;
      while (i < n && /[A-Za-z0-9_$]/.test(text[i]!)) i++;
      push(text.slice(start, i).toUpperCase(), i);
    } else {
      if (c === '(') depth++;
      if (c === ')') depth--;
      i++;
      push(c, i);
    }
  }
  const statement = (end >= 0 ? text.slice(0, end) : text).trim();
  if (!tokens.length) throw new QueryRefused('empty', 'The query is empty.');
  // The statement is run inside parentheses: a `)` of its own must not close them.
  if (depth !== 0 || tokens.some((t) => t.depth < 0)) throw new QueryRefused('unbalanced', 'The parentheses of the query do not balance.');
  return { statement, tokens };
}

function lexicalChecks(tokens: Token[]): void {
  const first = tokens[0]!.text;
  if (first !== 'SELECT' && first !== 'WITH' && first !== '(') {
    throw new QueryRefused('not_a_select', `Only SELECT queries are accepted (read-only access); found ${/^[A-Z]+$/.test(first) ? first : 'another statement'}.`);
  }
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.text === 'INTO' && tokens[k + 1]?.text === 'OUTFILE') {
      throw new QueryRefused('into_outfile', 'INTO OUTFILE is not accepted: the query may not write files. Use --out <file> (or npm run export).');
    }
    const keyword = t.next !== '(' && t.prev !== '.';
    if (t.text === 'FORMAT' && keyword && t.depth === 0) {
      throw new QueryRefused('format_clause', 'Remove the FORMAT clause: choose the output with --format table|csv|jsonl|parquet.');
    }
    if (t.text === 'SETTINGS' && keyword) {
      throw new QueryRefused('settings_clause', 'SETTINGS clauses are not accepted: the time and memory limits are set by the service (SQL_MAX_EXECUTION_SECONDS, SQL_MAX_MEMORY_BYTES).');
    }
  }
}

/**
 * Table functions that only compute from their arguments or read this warehouse's own tables.
 * Every other table function (file, url, s3, postgresql, remote, executable, python...) reads
 * outside the warehouse, as does the ordinary function `file`.
 */
const SAFE_TABLE_FUNCTIONS = new Set(['numbers', 'numbers_mt', 'zeros', 'zeros_mt', 'values', 'generate_series', 'generateseries', 'generaterandom', 'view', 'format', 'null', 'merge']);
const ALWAYS_EXTERNAL = [
  'file', 'filecluster', 'url', 'urlcluster', 's3', 's3cluster', 'gcs', 'azureblobstorage', 'hdfs', 'postgresql', 'mysql',
  'mongodb', 'redis', 'sqlite', 'jdbc', 'odbc', 'remote', 'remotesecure', 'cluster', 'clusterallreplicas', 'executable',
  'python', 'iceberg', 'deltalake', 'hudi', 'input', 'dictionary',
];

export interface WarehouseAccess {
  /** Runs a query ending with its own FORMAT clause, returns the bytes. */
  bytes(query: NamedQuery, params?: Record<string, unknown>): Promise<Buffer>;
}

const tableFunctionsQuery = sql('analytics.table_functions', `SELECT lower(name) FROM system.table_functions FORMAT TabSeparatedRaw`);

/** The names (lower case) of functions that read outside the warehouse, from this engine's own list. */
async function externalFunctions(access: WarehouseAccess): Promise<Set<string>> {
  // A server may keep system tables from a restricted user (select_from_system_db_requires_grant):
  // then the fixed list, and the engine's readonly and the user's missing source grants, remain.
  const names = await access.bytes(tableFunctionsQuery).then(
    (bytes) => bytes.toString('utf8').split('\n').filter(Boolean),
    () => [] as string[],
  );
  return new Set([...names.filter((name) => !SAFE_TABLE_FUNCTIONS.has(name)), ...ALWAYS_EXTERNAL]);
}

const AST_LINE = /^( *)(\S+)(?: (\S+))?/;

/** Layer 2: ClickHouse's parser reads the statement; refuses anything but a plain SELECT. */
async function parserChecks(access: WarehouseAccess, statement: string, params: Record<string, unknown>): Promise<void> {
  // As a subquery, so that FORMAT belongs to the outer SELECT (EXPLAIN would give it to the statement).
  const explain = sql('analytics.explain', `SELECT explain FROM (EXPLAIN AST\n${statement}\n)\nFORMAT TabSeparatedRaw`);
  const ast = await access.bytes(explain, params).then(
    (bytes) => bytes.toString('utf8').split('\n').filter(Boolean),
    (error: Error) => {
      // ClickHouse explains only a SELECT this way: anything else is not one.
      if (/EXPLAIN inside subquery supported only for SELECT/i.test(error.message)) {
        throw new QueryRefused('not_a_select', 'Only SELECT queries are accepted (read-only access).');
      }
      throw error;
    },
  );
  const root = AST_LINE.exec(ast[0] ?? '');
  if (!root || root[2] !== 'SelectWithUnionQuery') {
    throw new QueryRefused('not_a_select', `Only SELECT queries are accepted (read-only access); found ${root?.[2]?.replace(/Query$/, '') ?? 'another statement'}.`);
  }
  const external = await externalFunctions(access);
  for (const line of ast.slice(1)) {
    const [, indent = '', node, name] = AST_LINE.exec(line) ?? [];
    if (node === 'Set') {
      throw new QueryRefused('settings_clause', 'SETTINGS clauses are not accepted: the time and memory limits are set by the service (SQL_MAX_EXECUTION_SECONDS, SQL_MAX_MEMORY_BYTES).');
    }
    if (node === 'Function' && name && external.has(name.toLowerCase())) {
      throw new QueryRefused('external_access', `${name}() is not accepted: queries may read the warehouse only, not files, URLs or other databases.`);
    }
    // Directly under the root only the SELECT list (INTO OUTFILE, SETTINGS and FORMAT would show
    // here, and were refused above already).
    if (indent.length === 1 && node !== 'ExpressionList') {
      throw new QueryRefused('not_a_select', 'Only a plain SELECT is accepted (no INTO OUTFILE, SETTINGS or FORMAT clause).');
    }
  }
}

/**
 * Checks an analyst's query and returns the text to run: the query wrapped in a SELECT that
 * carries the limits and readonly = 1 (left out when the session is read-only already, as the
 * analyst user of docker-compose.yml is: changing `readonly` there is itself refused), then the
 * chosen format.
 */
export async function prepareQuery(
  access: WarehouseAccess,
  text: string,
  options: { format: OutputFormat; limits: QueryLimits; sessionReadOnly: boolean; params?: Record<string, unknown> },
): Promise<NamedQuery> {
  const { statement, tokens } = singleStatement(text);
  lexicalChecks(tokens);
  await parserChecks(access, statement, options.params ?? {});
  const settings = [
    `max_execution_time = ${Math.floor(options.limits.maxExecutionSeconds)}`,
    `max_memory_usage = ${Math.floor(options.limits.maxMemoryBytes)}`,
    ...(options.sessionReadOnly ? [] : ['readonly = 1']),
  ];
  // Newlines around the statement: a trailing `-- comment` must not swallow the wrapper.
  return sql('analytics.query', `SELECT * FROM (\n${statement}\n)\nSETTINGS ${settings.join(', ')}\nFORMAT ${OUTPUT_FORMATS[options.format]}`);
}

const readOnlyQuery = sql('analytics.session_readonly', `SELECT getSetting('readonly') FORMAT TabSeparatedRaw`);

/** Whether the session is read-only already (a readonly profile): then readonly may not be set again. */
export async function sessionReadOnly(access: WarehouseAccess): Promise<boolean> {
  return Number((await access.bytes(readOnlyQuery)).toString('utf8').trim()) > 0;
}
