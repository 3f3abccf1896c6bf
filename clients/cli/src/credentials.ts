import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What `svc login` keeps: the login token of one service, readable by its owner only. */
export interface StoredLogin {
  baseUrl: string;
  token: string;
  expiresAt: string;
  email: string;
}

export function credentialStore(configDir: string) {
  const file = join(configDir, 'credentials.json');
  return {
    file,
    async read(): Promise<StoredLogin | undefined> {
      try {
        return JSON.parse(await readFile(file, 'utf8')) as StoredLogin;
      } catch {
        return undefined;
      }
    },
    async write(login: StoredLogin): Promise<void> {
      await mkdir(configDir, { recursive: true, mode: 0o700 });
      await writeFile(file, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
      await chmod(file, 0o600); // an older file keeps its mode on overwrite
    },
    async remove(): Promise<boolean> {
      const existed = (await this.read()) !== undefined;
      await rm(file, { force: true });
      return existed;
    },
  };
}

export type CredentialStore = ReturnType<typeof credentialStore>;
