/**
 * The operator's commands (`npm run ops -- <command>`), one function each, shared by the script
 * (scripts/ops.ts, which opens the database itself) and the running service's operator endpoint
 * (endpoint.ts: the embedded database is one process's, so while the service runs the script asks
 * it). Each answers the lines to print, or throws an Error whose message is for the operator.
 */
import { readFile } from 'node:fs/promises';
import type { Database } from '../../core/db.js';
import { importFxRates, OPERATOR_RATES, summaryLine } from '../../domain/fx/rates.js';
import { issueAgentKey, listAgentKeys, parseScopes, revokeAgentKey } from '../../domain/access/agent-keys.js';
import { markKeyForRotation } from '../../domain/programs/api-keys.js';
import { releaseProcessorAccount } from '../../domain/payments/account-owners.js';
import { addMember, createSession, createWorkspace, reinstateUser, revokeUserSessions, suspendUser, type Role } from '../../domain/access/workspaces.js';

export const usage = `usage:
  npm run ops -- mark-key-rotation <programId> <deadline ISO 8601>
  npm run ops -- create-workspace <name> <owner email>
  npm run ops -- create-session <workspaceId> <email> [owner|member]
  npm run ops -- issue-agent-key <workspaceId> <scopes: all | comma-separated> [name]
  npm run ops -- revoke-agent-key <keyId>
  npm run ops -- list-agent-keys <workspaceId>
  npm run ops -- revoke-sessions <email>
  npm run ops -- suspend-user <email>
  npm run ops -- reinstate-user <email>
  npm run ops -- release-processor-account <acct_...>
  npm run ops -- import-fx-rates <file.csv>          (--help: the file's format)`;

/** import-fx-rates --help: the format (docs/decisions/currencies.md, "The rates file"). */
export const FX_RATES_HELP = `usage: npm run ops -- import-fx-rates <file.csv>

Loads daily exchange rates for every workspace, in the layout of the ECB's published history
(https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip, eurofxref-hist.csv):

  Date,USD,JPY,VND,
  2026-11-26,1.0512,163.27,27395.5,
  2026-11-25,1.0498,N/A,27380,

- line 1: Date, then one current ISO 4217 currency code per column (any, not only the ECB's;
  not EUR, the base); a trailing comma is allowed;
- then one line per day (YYYY-MM-DD, UTC, not after today): how many units of each currency buy
  one euro that day, a decimal above 0 with up to 10 decimals; N/A or empty: no rate that day.

A sale's amount is converted with the latest rate on or before its day (UTC); the cross rate of
two currencies is the ratio of their euro rates. A stored rate is fixed: the same value again is
left as it is (importing a file again changes nothing); a different one refuses the file. The file
is stored whole or not at all: every problem is printed with its line, and nothing is written.`;

const positiveId = (value: string | undefined): number => {
  const id = Number(value);
  if (!value || !Number.isSafeInteger(id) || id <= 0) throw new Error(usage);
  return id;
};

/** One operator command: its arguments checked (the usage when they are wrong), done, its outcome printed. */
type Command = (db: Database, args: string[], out: string[]) => Promise<void>;

/** The email argument of the per-person commands. */
const emailOf = (args: string[]): string => {
  if (!args[0]) throw new Error(usage);
  return args[0];
};

/** The commands by name, one function each. */
const COMMANDS: Record<string, Command> = {
  'mark-key-rotation': async (db, args, out) => {
    const programId = Number(args[0]);
    const deadline = new Date(args[1] ?? '');
    if (!Number.isSafeInteger(programId) || programId <= 0 || Number.isNaN(deadline.getTime())) throw new Error(usage);
    const marked = await markKeyForRotation(db, programId, deadline);
    if (!marked) throw new Error(`program ${programId} has no API key`);
    out.push(`key of program ${programId} marked at ${marked.markedAt.toISOString()}; retired from ${marked.deadline.toISOString()}`);
  },

  'create-workspace': async (db, [name, email], out) => {
    if (!name || !email) throw new Error(usage);
    const workspaceId = await createWorkspace(db, name);
    const userId = await addMember(db, workspaceId, email, 'owner');
    out.push(JSON.stringify({ workspaceId, dashboardToken: await createSession(db, userId) }));
  },

  'create-session': async (db, [workspaceId, email, role = 'member'], out) => {
    if (!workspaceId || !email || (role !== 'owner' && role !== 'member')) throw new Error(usage);
    const userId = await addMember(db, Number(workspaceId), email, role as Role);
    out.push(JSON.stringify({ dashboardToken: await createSession(db, userId) }));
  },

  // Agent keys (issue 13) are issued only here: no endpoint creates one. The key is printed once.
  'issue-agent-key': async (db, args, out) => {
    const workspaceId = positiveId(args[0]);
    if (!args[1]) throw new Error(usage);
    const issued = await issueAgentKey(db, workspaceId, args[2] ?? 'agent', parseScopes(args[1]));
    out.push(JSON.stringify({ keyId: issued.id, workspaceId, scopes: issued.scopes, agentKey: issued.agentKey }));
  },

  'revoke-agent-key': async (db, args, out) => {
    const keyId = positiveId(args[0]);
    const revokedAt = await revokeAgentKey(db, keyId);
    if (!revokedAt) throw new Error(`agent key ${keyId} does not exist`);
    out.push(`agent key ${keyId} revoked at ${revokedAt.toISOString()}`);
  },

  'list-agent-keys': async (db, args, out) => {
    for (const key of await listAgentKeys(db, positiveId(args[0]))) out.push(JSON.stringify(key));
  },

  // A person's access ends at once: every dashboard session and CLI login token of the email.
  'revoke-sessions': async (db, args, out) => {
    const email = emailOf(args);
    const revoked = await revokeUserSessions(db, email);
    if (!revoked.users) throw new Error(`no user has the email ${email}`);
    out.push(`${email}: ${revoked.sessions} dashboard session(s) and ${revoked.loginTokens} CLI login token(s) revoked`);
  },

  // A hold, not a sign-out: every credential of the person is refused until reinstate-user.
  'suspend-user': async (db, args, out) => {
    const email = emailOf(args);
    const since = await suspendUser(db, email);
    if (!since) throw new Error(`no user has the email ${email}`);
    out.push(`${email}: suspended since ${since.toISOString()}; dashboard sessions and CLI login tokens are refused until reinstate-user`);
  },

  'reinstate-user': async (db, args, out) => {
    const email = emailOf(args);
    if (!(await reinstateUser(db, email))) throw new Error(`no user has the email ${email}`);
    out.push(`${email}: reinstated; sessions and login tokens that have not expired or been revoked work again`);
  },

  // A dispute over who holds a processor account, settled by the operator (see releaseProcessorAccount).
  // Issue 30: the operator's daily rates, for every workspace (docs/decisions/currencies.md).
  'import-fx-rates': async (db, [file], out) => {
    if (!file || file === '--help' || file === '-h') {
      out.push(FX_RATES_HELP);
      return;
    }
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new Error(`${file}: ${(error as Error).message}`);
    }
    const outcome = await importFxRates(db, OPERATOR_RATES, text, new Date().toISOString().slice(0, 10));
    if (!outcome.ok) {
      throw new Error([`${file}: refused, nothing stored`, ...outcome.problems.map((p) => `${file}:${p.line}: ${p.message}`)].join('\n'));
    }
    out.push(`${file}: ${summaryLine(outcome.summary)}`);
  },

  'release-processor-account': async (db, [accountId], out) => {
    if (!accountId) throw new Error(usage);
    const released = await releaseProcessorAccount(db, accountId);
    if (!released) throw new Error(`no workspace holds the processor account ${accountId}`);
    out.push(`${accountId}: released from workspace ${released.workspaceId} (${released.programs} program connection(s) removed); it can be connected again`);
  },
};


/** Runs one command by name; its output lines. An unknown name or wrong arguments throw the usage. */
export async function runOperatorCommand(db: Database, name: string | undefined, args: string[]): Promise<string[]> {
  const command = Object.hasOwn(COMMANDS, name ?? '') ? COMMANDS[name!] : undefined;
  if (!command) throw new Error(usage);
  const out: string[] = [];
  await command(db, args, out);
  return out;
}
