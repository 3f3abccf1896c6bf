/**
 * What each console browser test starts from: Chromium, PGlite, chDB in a directory of its own,
 * the console service on them (tests/support/console-service.ts) and a brand with an owner and a
 * member (console-browser.ts). Closed in the reverse order, whatever part of it was made.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import type { Database } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { launchChromium } from './browser.js';
import { createBrand, type Brand } from './console-browser.js';
import { startConsoleService, type ConsoleService } from './console-service.js';
import { createTestDatabase } from './databases.js';

export interface ConsoleWorld {
  browser: Browser;
  db: Database;
  warehouse: Warehouse;
  service: ConsoleService;
  /** The service's URL. */
  base: string;
  brand: Brand;
  close(): Promise<void>;
}

/** `dirPrefix` names the temporary directory of the warehouse; `tag` makes the brand's addresses unique. */
export async function openConsoleWorld(dirPrefix: string, tag: string, options: { webhooks?: { allowPrivateUrls: boolean } } = {}): Promise<ConsoleWorld> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer();
  };
  try {
    const browser = await launchChromium();
    closers.push(() => browser.close());
    const t = await createTestDatabase('pglite');
    closers.push(() => t.drop());
    const dir = await mkdtemp(join(tmpdir(), dirPrefix));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    closers.push(() => warehouse.close());
    await migrateWarehouse(warehouse);
    const service = await startConsoleService(t.db, { warehouse, ...options });
    closers.push(() => service.close());
    const brand = await createBrand(t.db, tag);
    return { browser, db: t.db, warehouse, service, base: service.url, brand, close };
  } catch (error) {
    await close();
    throw error;
  }
}
