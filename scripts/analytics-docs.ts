/**
 * Writes docs/analytics.md, the data dictionary of the analytics views, from a warehouse built by
 * the migrations: `npm run docs:analytics` after changing a view or a COMMENT.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { DICTIONARY_PATH, dictionaryFromMigrations } from '../queries/analytics/dictionary.js';

const text = await dictionaryFromMigrations();
await writeFile(DICTIONARY_PATH, text);
process.stdout.write(`${fileURLToPath(DICTIONARY_PATH)} written\n`);
