// chdb declares one optional engine package per platform. The registry reachable from our
// machines serves only the linux-x64 one, so `npm install` leaves the others out of
// package-lock.json, and `npm ci` then refuses the lock as out of sync. This puts them back as
// optional entries with their os and cpu, which npm skips on other platforms without fetching.
// Run after any `npm install` that touches package-lock.json: npx tsx scripts/lock-chdb-platforms.ts
import { readFileSync, writeFileSync } from 'node:fs';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockEntry> };
const chdb = lock.packages['node_modules/chdb'];
if (!chdb) process.exit(0);
const declared: Record<string, string> =
  (JSON.parse(readFileSync('node_modules/chdb/package.json', 'utf8')) as LockEntry).optionalDependencies ?? {};
const platform: Record<string, [string, string]> = { 'lib-darwin-arm64': ['darwin', 'arm64'], 'lib-darwin-x64': ['darwin', 'x64'], 'lib-linux-arm64-gnu': ['linux', 'arm64'], 'lib-linux-x64-gnu': ['linux', 'x64'] };
chdb.optionalDependencies = declared;
let added = 0;
for (const [name, version] of Object.entries(declared)) {
  const key = `node_modules/${name}`;
  const [os, cpu] = platform[name.replace('@chdb/', '')] ?? [];
  if (lock.packages[key] || !os) continue;
  lock.packages[key] = { version, cpu: [cpu], license: 'Apache-2.0', optional: true, os: [os] };
  added += 1;
}
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: ${added} chdb platform entr${added === 1 ? 'y' : 'ies'} added`);
