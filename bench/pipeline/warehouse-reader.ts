/**
 * The pipeline benchmark's warehouse reader, run as a child process after the loader has stopped:
 * chDB binds one data directory per process, so each run's directory is read by a process of its
 * own. Writes one JSON document to <out-file>; the queries are in warehouse-figures.ts (a run on
 * the ClickHouse server is read in the benchmark's own process).
 *
 *   tsx bench/pipeline/warehouse-reader.ts <chdb-dir> summary <out-file>   per event table: rows, distinct
 *                                                                   events, first and last loaded_at
 *   tsx bench/pipeline/warehouse-reader.ts <chdb-dir> clicks <out-file>    every click_id with its loaded_at
 */
import { writeFile } from 'node:fs/promises';
import { openWarehouse } from '../../core/warehouse.js';
import { readClicks, readSummary } from './warehouse-figures.js';

async function main() {
  const [dir, mode, out] = process.argv.slice(2);
  if (!dir || !out || (mode !== 'summary' && mode !== 'clicks')) {
    throw new Error('usage: tsx bench/pipeline/warehouse-reader.ts <chdb-dir> summary|clicks <out-file>');
  }
  const warehouse = await openWarehouse({ kind: 'chdb', path: dir });
  try {
    await writeFile(out, JSON.stringify(mode === 'clicks' ? await readClicks(warehouse) : await readSummary(warehouse)));
  } finally {
    await warehouse.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
