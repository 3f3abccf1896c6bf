// The client packages under clients/ are npm workspaces that `npm test` typechecks through each
// package's own `typecheck` script (`npm run typecheck --workspaces --if-present`). A package
// without that script, or with a tsconfig of its own making, would be skipped or checked in the
// wrong environment without any error: these checks make that a failing test instead.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

interface PackageJson {
  name?: string;
  type?: string;
  workspaces?: string[];
  exports?: Record<string, unknown>;
  scripts?: Record<string, string>;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
/** tsconfig files may carry comments; these hold none inside strings. */
const readTsconfig = (path: string) =>
  JSON.parse(readFileSync(path, 'utf8').replace(/^\s*\/\/.*$/gm, '')) as { extends?: string; include?: string[]; exclude?: string[] };

const root = readJson<PackageJson>('package.json');
const packages = readdirSync('clients', { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join('clients', entry.name, 'package.json')))
  .map((entry) => join('clients', entry.name));

describe('client workspaces', () => {
  it('the root is a workspaces root whose typecheck runs every workspace', () => {
    expect(root.workspaces).toEqual(['clients/*']);
    expect(root.scripts?.typecheck).toContain('--workspaces');
    expect(packages.length).toBeGreaterThanOrEqual(3);
  });

  it('the service is not typechecked with the clients', () => {
    expect(readTsconfig('tsconfig.json').exclude).toContain('clients');
  });

  it.each(packages)('%s is an ESM package with types, typechecked in its own environment', (dir) => {
    const pkg = readJson<PackageJson>(join(dir, 'package.json'));
    expect(pkg.name).toBeTruthy();
    expect(pkg.type).toBe('module');
    expect(pkg.scripts?.typecheck).toMatch(/^tsc -p \./);
    const entry = pkg.exports?.['.'] as Record<string, string> | undefined;
    expect(entry?.types).toMatch(/\.d\.ts$/);
    expect(readTsconfig(join(dir, 'tsconfig.json')).extends).toBe('../../tsconfig.base.json');
    expect(existsSync(join(dir, 'README.md'))).toBe(true);
  });
});
