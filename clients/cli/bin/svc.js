#!/usr/bin/env node
// The svc command. In this repository the TypeScript source runs through tsx (so a stale build
// is never used); the published package has no src/ and runs dist/bin.js.
import { existsSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

const source = new URL('../src/bin.ts', import.meta.url);
if (existsSync(fileURLToPath(source))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/bin.js', import.meta.url).href);
}
