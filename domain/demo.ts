import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql, type Database } from '../core/db.js';
import { AGENT_SCOPES } from './access/access.js';
import { issueAgentKey } from './access/agent-keys.js';
import { systemContext } from './audit/audit.js';
import { issueProgramKey } from './programs/api-keys.js';
import { createPartner, createProgram } from './programs/programs.js';
import { addMember, createSession, createWorkspace } from './access/workspaces.js';

export interface DemoCredentials {
  programId: number;
  apiKey: string;
  affCode: string;
  dashboardToken: string;
  /** An agent key (`agt_`) of the demo workspace with every scope (issue 13). */
  agentKey: string;
  /** The payment processor's webhook signing secret (`whsec_`) this start accepts (issue 12). */
  processorWebhookSecret?: string;
}

/** The demo data of this start: `created` only on the start that made it. */
export interface DemoStart {
  credentials: DemoCredentials;
  created: boolean;
  /** Where the credentials are kept (mode 600). */
  file: string;
}

const anyWorkspace = sql('demo.any_workspace', `SELECT 1 AS found FROM workspaces LIMIT 1`);

/**
 * On a fresh data directory: a demo workspace, owner session, program, key, partner and link, so
 * a new user can call the API with curl at once (an agent key with every scope included). The keys are written to
 * <dataDir>/demo-credentials.json (the only place the full key is kept: the database has its hash).
 */
export async function ensureDemo(db: Database, dataDir: string, siteOrigin: string): Promise<DemoStart | undefined> {
  const file = join(dataDir, 'demo-credentials.json');
  if (existsSync(file)) return { credentials: JSON.parse(await readFile(file, 'utf8')) as DemoCredentials, created: false, file };
  if (await db.one(anyWorkspace)) return undefined; // not fresh: never seed beside real data
  const workspaceId = await createWorkspace(db, 'Demo workspace');
  const ownerId = await addMember(db, workspaceId, 'owner@demo.example', 'owner', 'Demo owner');
  const dashboardToken = await createSession(db, ownerId);
  const program = await createProgram(db, workspaceId, {
    name: 'Demo program',
    domain: 'shop.demo.example',
    commission_type: 'percent',
    commission_rate: 20,
    attribution_window_days: 60,
    lead_auth: 'server_required',
    paymentTrackingMode: 's2s',
    allowed_origins: [siteOrigin],
  }, systemContext('demo'));
  const { apiKey } = await issueProgramKey(db, program.id);
  const partner = await createPartner(db, program.id, { name: 'Demo partner', email: 'partner@demo.example', affCode: 'demo-partner' }, systemContext('demo'));
  const { agentKey } = await issueAgentKey(db, workspaceId, 'Demo agent', AGENT_SCOPES);
  const processorWebhookSecret = `whsec_${randomBytes(24).toString('base64url')}`;
  const credentials = { programId: program.id, apiKey, affCode: partner.affCode, dashboardToken, agentKey, processorWebhookSecret };
  await writeFile(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return { credentials, created: true, file };
}

/**
 * The demo's lines of the start banner. Secrets are printed once, on the start that created them
 * (terminals scroll into logs and screen shares); afterwards the banner names the file. `signIn`:
 * how to sign in, where the embedded OpenID provider does not run (start:distributed).
 */
export function demoBannerLines(url: string, demo: DemoStart, signIn = `owner@demo.example at ${url}/dashboard (the embedded sign-in asks no password)`): string[] {
  const { credentials } = demo;
  const lines = [
    `  demo sign-in:         ${signIn}`,
    `  demo program id:      ${credentials.programId}`,
    `  demo aff code:        ${credentials.affCode}`,
  ];
  if (demo.created) {
    lines.push(
      `  demo API key:         ${credentials.apiKey}`,
      `  demo dashboard token: ${credentials.dashboardToken}`,
      `  demo agent key:       ${credentials.agentKey}`,
      `  processor webhook secret: ${credentials.processorWebhookSecret}`,
      `  (shown once; kept in ${demo.file})`,
    );
  } else {
    lines.push(`  demo API key, dashboard token, agent key and processor webhook secret: in ${demo.file}`);
  }
  lines.push(
    ``,
    `  try: curl -s ${url}/api/v1/track/click -H 'content-type: application/json' \\`,
    `         -d '{"affiliate_url":"https://shop.demo.example/?aff=${credentials.affCode}"}'`,
  );
  return lines;
}
