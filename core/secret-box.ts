import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { link, open, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Secrets the service must read back (a processor account's webhook signing secret, to compute
 * HMACs), sealed with AES-256-GCM under SECRETS_KEY. `context` is bound as additional data, so a
 * sealed value copied to another row (another account) does not open there.
 */
export interface SecretBox {
  seal(plain: string, context: string): string;
  /** Throws when the value was not sealed by this key for this context. */
  open(sealed: string, context: string): string;
}

/** SECRETS_KEY, or where the embedded start keeps its own (main.ts: the distributed ingest refuses to start without one). */
export interface SecretsConfig {
  key: Buffer | undefined;
  keyFile: string;
}

/** The key: 32 bytes, base64 (`openssl rand -base64 32`). */
const SECRETS_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
// A version prefix, so a later format (or key id) can be told apart from this one.
const FORMAT = 'v1.';

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== SECRETS_KEY_BYTES) throw new Error(`the secrets key must be ${SECRETS_KEY_BYTES} bytes`);
  return {
    seal(plain, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return FORMAT + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    open(sealed, context) {
      if (!sealed.startsWith(FORMAT)) throw new Error('not a sealed secret');
      const bytes = Buffer.from(sealed.slice(FORMAT.length), 'base64url');
      if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES)).setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    },
  };
}

/** SECRETS_KEY's value as a key, or why not (config validation). */
export function decodeSecretsKey(value: string): Buffer | string {
  const text = value.trim();
  const key = Buffer.from(text, 'base64');
  // Node skips characters that are not base64: only a value that is exactly the key's encoding is taken.
  if (key.length === SECRETS_KEY_BYTES && key.toString('base64') === text) return key;
  return `must be ${SECRETS_KEY_BYTES} random bytes in base64 (e.g. openssl rand -base64 32); got ${key.length} bytes${key.toString('base64') === text ? '' : ' and characters that are not base64'}`;
}

/** The service's box: SECRETS_KEY when set, else the embedded start's key file. */
export async function openSecretBox(secrets: SecretsConfig): Promise<SecretBox> {
  return createSecretBox(secrets.key ?? (await loadOrCreateKeyFile(secrets.keyFile)));
}

/**
 * The embedded start's key: read from `path`, or made there on the first start (mode 0600). It is
 * written whole to a file of its own, then linked to `path`, which never replaces a key already
 * there: a reader never sees a half-written key, and two starts at once end with the same one.
 */
export async function loadOrCreateKeyFile(path: string): Promise<Buffer> {
  const existing = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing === undefined) await createKeyFile(path);
  const key = decodeSecretsKey(existing ?? (await readFile(path, 'utf8')));
  if (typeof key === 'string') throw new Error(`${path}: ${key}`);
  return key;
}

async function createKeyFile(path: string): Promise<void> {
  const draft = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const file = await open(draft, 'wx', 0o600);
    try {
      await file.writeFile(`${randomBytes(SECRETS_KEY_BYTES).toString('base64')}\n`);
      await file.sync();
    } finally {
      await file.close();
    }
    await link(draft, path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    // The new name survives a power loss too: a lost key would leave every sealed secret unreadable.
    const dir = await open(dirname(path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } finally {
    await rm(draft, { force: true });
  }
}

/**
 * Ingest processes of the distributed mode must all seal and open with one key, so none may make
 * up its own: without SECRETS_KEY such a process refuses to start (the embedded start keeps a
 * key file instead).
 */
export function requireSecretsKey(config: { roles: ReadonlySet<string>; database: { kind: string }; secrets: SecretsConfig }): void {
  if ((!config.roles.has('ingest') && !config.roles.has('webhooks')) || config.database.kind !== 'postgres' || config.secrets.key) return;
  throw new Error(
    'Invalid configuration:\n  SECRETS_KEY: required with DATABASE_URL for the ingest role and the webhooks role. Every such process seals ' +
      "or opens processor accounts' and webhook endpoints' secrets with it, so give them all the same one: 32 random bytes, base64 (openssl rand -base64 32). " +
      'Keep it with your other secrets: sealed secrets do not open without it.',
  );
}
