#!/usr/bin/env node
// The svc command. A built package runs dist/bin.js; in this repository (no build step) the
// TypeScript source runs through tsx, which the workspace already has.
import { existsSync } from 'node:fs';
import { URL, fileURLToPath, pathToFileURL } from 'node:url';

const built = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/bin.ts', import.meta.url).href);
}
