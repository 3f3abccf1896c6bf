/**
 * Every live SQL function is defined in exactly one file, schemas/postgres/functions/<name>.sql,
 * which core/migrate.ts applies again when it changes; the numbered migrations hold tables and data
 * only: none defines or calls a function (a DROP FUNCTION of an obsolete one is allowed).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCHEMAS = fileURLToPath(new URL('../../../schemas/', import.meta.url));
const FUNCTIONS = join(SCHEMAS, 'postgres/functions');
const NUMBERED = /^\d{4}_[a-z0-9_]+\.sql$/;
const DEFINITION = /create\s+(or\s+replace\s+)?function\s+(?:public\.)?([a-z0-9_]+)/gi;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** The SQL a migration runs: without comments, and without its DROP FUNCTION statements. */
const statements = (text: string) =>
  text
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/--.*$/gm, '')
    .replace(/drop\s+function\s[^;]*;/gi, '');

describe('SQL functions as repeatable definitions (schemas/postgres/functions/)', () => {
  it('each function file defines, with CREATE OR REPLACE, only the function it is named after', async () => {
    const files = (await readdir(FUNCTIONS)).sort();
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      expect(file).toMatch(/^[a-z0-9_]+\.sql$/);
      const definitions = [...(await readFile(join(FUNCTIONS, file), 'utf8')).matchAll(DEFINITION)];
      expect(definitions.length, file).toBeGreaterThan(0);
      for (const [, orReplace, name] of definitions) {
        expect(name, file).toBe(file.slice(0, -'.sql'.length));
        expect(orReplace, `${file}: CREATE OR REPLACE, so that it can be applied again`).toBeDefined();
      }
    }
  });

  it('each function name is defined in exactly one file under schemas/', async () => {
    const definedIn = new Map<string, Set<string>>();
    for (const path of await filesUnder(SCHEMAS)) {
      for (const [, , name] of (await readFile(path, 'utf8')).matchAll(DEFINITION)) {
        const files = definedIn.get(name!.toLowerCase()) ?? new Set();
        files.add(relative(SCHEMAS, path));
        definedIn.set(name!.toLowerCase(), files);
      }
    }
    const names = (await readdir(FUNCTIONS)).map((f) => f.slice(0, -'.sql'.length));
    expect([...definedIn.keys()].sort()).toEqual(names.sort());
    for (const [name, files] of definedIn) expect([...files], name).toEqual([`postgres/functions/${name}.sql`]);
  });

  it('no numbered migration defines, alters or calls a function', async () => {
    const names = (await readdir(FUNCTIONS)).map((f) => f.slice(0, -'.sql'.length));
    const migrations = (await readdir(join(SCHEMAS, 'postgres'))).filter((f) => NUMBERED.test(f));
    expect(migrations.length).toBeGreaterThan(0);
    for (const file of migrations) {
      const text = statements(await readFile(join(SCHEMAS, 'postgres', file), 'utf8'));
      expect(text, file).not.toMatch(/\bfunction\b/i);
      expect(text, file).not.toMatch(/\bDO\s*\$/i);
      for (const name of names) expect(text, `${file} names ${name}`).not.toMatch(new RegExp(`\\b${name}\\b`, 'i'));
    }
  });
});
