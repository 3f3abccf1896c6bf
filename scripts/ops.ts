/**
 * Operator commands against the configured database (DATABASE_URL, or the embedded one under DATA_DIR).
 *
 *   npm run ops -- mark-key-rotation <programId> <deadline ISO 8601>
 *   npm run ops -- create-workspace <name> <owner email>
 *   npm run ops -- create-session <workspaceId> <email> [owner|member]
 *   npm run ops -- issue-agent-key <workspaceId> <scopes: all | comma-separated> [name]
 *   npm run ops -- revoke-agent-key <keyId>
 *   npm run ops -- list-agent-keys <workspaceId>
 *   npm run ops -- revoke-sessions <email>
 *   npm run ops -- suspend-user <email>
 *   npm run ops -- reinstate-user <email>
 *   npm run ops -- release-processor-account <acct_...>
 *   npm run ops -- verify-statement <programId> <YYYY-MM>   (scripts/verify-statement.ts)
 *   npm run ops -- import-fx-rates <file.csv>               (--help: the ECB layout it reads)
 *
 * While the embedded service runs, the command is run by it (its operator endpoint); the commands
 * themselves are in ingest/operator/commands.ts.
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { loadConfig, type Config } from '../core/config.js';
import { createLogger } from '../core/log.js';
import { openDatabase } from '../core/db.js';
import { migrate } from '../core/migrate.js';
import { runOperatorCommand, usage } from '../ingest/operator/commands.js';
import { runningOpsEndpoint, runThroughService } from '../ingest/operator/endpoint.js';
import { verificationLines, verifyStatement } from './verify-statement.js';

/**
 * verify-statement replays the event log through the stream processors' codec, which the service's
 * operator endpoint does not load: it opens the database itself (Postgres, or the embedded one
 * when the service is stopped). Exit code 2 on a mismatch.
 */
async function verify(config: Config, args: string[]) {
  const programId = Number(args[0]);
  if (!Number.isSafeInteger(programId) || programId <= 0 || !/^\d{4}-\d{2}$/.test(args[1] ?? '')) {
    throw new Error('usage: npm run ops -- verify-statement <programId> <YYYY-MM>');
  }
  if (config.database.kind === 'pglite' && (await runningOpsEndpoint(config.dataDir))) {
    throw new Error('verify-statement reads the embedded database directly: stop the service (Ctrl-C), run it, then start the service again');
  }
  const db = await openDatabase(config.database);
  try {
    await migrate(db);
    const v = await verifyStatement({ db, kafka: config.kafka, logger: createLogger(config.logLevel) }, programId, args[1]!);
    for (const line of verificationLines(v)) console.log(line);
    if (!v.match) process.exitCode = 2;
  } finally {
    await db.close();
  }
}

/**
 * With the embedded database (PGlite), a running service holds the data directory: the command
 * goes through its operator endpoint (ingest/operator/endpoint.ts), so a session or key made here
 * is one the service knows. Otherwise (service stopped, or Postgres) the database is opened here.
 */
async function main(argv: string[]) {
  const [name, ...given] = argv;
  if (!name) throw new Error(usage);
  // The running service reads the file itself: it gets the path from here, not from its own directory.
  const args = name === 'import-fx-rates' && given[0] && !given[0].startsWith('-') ? [resolve(given[0]), ...given.slice(1)] : given;
  const config = loadConfig();
  if (name === 'verify-statement') return verify(config, args);
  if (config.database.kind === 'pglite') {
    const service = await runningOpsEndpoint(config.dataDir);
    if (service) {
      for (const line of await runThroughService(service, name, args)) console.log(line);
      return;
    }
    await mkdir(config.dataDir, { recursive: true });
  }
  const db = await openDatabase(config.database);
  try {
    await migrate(db);
    for (const line of await runOperatorCommand(db, name, args)) console.log(line);
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});
