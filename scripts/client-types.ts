/**
 * Writes the clients' wire types from the surfaces' zod schemas (the contract), so an SDK's types
 * cannot drift from what the routes accept and answer: `npm run build:client-types` after changing
 * a surface's schemas. Requests are converted on their input side (what a client may send: a
 * field with a default is optional), responses on their output side (what the service answers);
 * zod's `toJSONSchema` gives JSON Schema and json-schema-to-typescript turns that into
 * TypeScript. tests/clients/wire-types.test.ts fails when a committed file differs from the output.
 *
 * A client package never imports the service (it is installed without it), so the types are
 * written into its sources as a plain file. A new client, or a client of another surface, is one
 * more entry in CLIENTS.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { z } from 'zod';
import * as cli from '../ingest/cli/schemas.js';
import * as tracking from '../ingest/tracking/schemas.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The schemas a client takes from one surface's contract module, by export name. */
export interface SurfaceTypes {
  /** The module's path from the repository root, named in the generated file's header. */
  path: string;
  module: Record<string, unknown>;
  requests: string[];
  responses: string[];
}

export interface ClientTypes {
  /** The generated file, from the repository root. */
  out: string;
  surfaces: SurfaceTypes[];
}

/** Checks the names against the module's exports at compile time. */
function surface<M extends Record<string, unknown>>(path: string, module: M, names: { requests: (keyof M & string)[]; responses: (keyof M & string)[] }): SurfaceTypes {
  return { path, module, ...names };
}

const TRACKING = 'ingest/tracking/schemas.ts';

export const CLIENTS: ClientTypes[] = [
  {
    out: 'clients/server-sdk/src/wire.ts',
    surfaces: [
      surface(TRACKING, tracking, {
        requests: ['LeadRequest', 'SaleRequest', 'RefundRequest'],
        responses: ['LeadResponse', 'LeadData', 'SaleResponse', 'SaleData', 'RefundResponse', 'RefundData', 'RotationWarning', 'PlatformError', 'TypedError'],
      }),
    ],
  },
  {
    out: 'clients/browser/src/wire.ts',
    surfaces: [surface(TRACKING, tracking, { requests: ['ClickRequest', 'LeadRequest'], responses: ['ClickResponse', 'LeadResponse', 'LeadData'] })],
  },
  {
    out: 'clients/cli/src/wire.ts',
    surfaces: [
      // The svc command reads the `data` of each answer (clients/cli/src/api.ts unwraps it).
      surface('ingest/cli/schemas.ts', cli, {
        requests: ['InitRequest', 'TestEventRequest'],
        responses: ['LoginStartData', 'LoginPollData', 'ProgramItem', 'InitData', 'StatusData', 'TestEventData', 'PayoutsData'],
      }),
    ],
  },
];

const SCHEMA_KEYS = ['type', 'enum', 'const', '$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'properties', 'items'];

/**
 * A schema that allows any value (`z.unknown()`, such as the sale's currency, judged by the
 * route) has no type keyword; json-schema-to-typescript would read it as an object.
 */
function anyValueIsUnknown(schema: JSONSchema): JSONSchema {
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = { ...schema };
  if (!SCHEMA_KEYS.some((key) => key in schema)) out.tsType = 'unknown';
  const nested = (value: unknown) => anyValueIsUnknown(value as JSONSchema);
  for (const key of ['properties', 'definitions'] as const) {
    if (schema[key]) out[key] = Object.fromEntries(Object.entries(schema[key]).map(([name, value]) => [name, nested(value)]));
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) if (schema[key]) out[key] = schema[key].map(nested);
  if (schema.items) out.items = Array.isArray(schema.items) ? schema.items.map(nested) : nested(schema.items);
  if (typeof schema.additionalProperties === 'object') out.additionalProperties = nested(schema.additionalProperties);
  return out as JSONSchema;
}

/** JSON Schema of each named export, one side of the schemas; a named schema inside another becomes a reference to it. */
function definitions(s: SurfaceTypes, io: 'input' | 'output', names: string[]): Record<string, JSONSchema> {
  const registry = z.registry<{ id: string }>();
  for (const name of names) {
    const schema = s.module[name];
    if (!(schema instanceof z.ZodType)) throw new Error(`${s.path}: ${name} is not a zod schema`);
    registry.add(schema, { id: name });
  }
  const { schemas } = z.toJSONSchema(registry, { io, target: 'draft-7', uri: (id) => `#/definitions/${id}` });
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => {
      const { $schema: _schema, $id: _id, ...rest } = schema;
      return [name, anyValueIsUnknown({ ...(rest as JSONSchema), title: name })];
    }),
  );
}

/** The generated file of one client. */
export async function clientTypes(client: ClientTypes): Promise<string> {
  const parts = [
    `// Generated by \`npm run build:client-types\` (scripts/client-types.ts) from ${client.surfaces.map((s) => s.path).join(', ')}:`,
    '// do not edit. Requests are what the service accepts (the schemas\' input side), responses what it',
    '// answers (their output side).',
  ];
  for (const s of client.surfaces) {
    const defs = { ...definitions(s, 'input', s.requests), ...definitions(s, 'output', s.responses) };
    const names = [...s.requests, ...s.responses];
    if (new Set(names).size !== names.length) throw new Error(`${s.path}: a name is listed twice`);
    for (const name of names) {
      const ts = await compile({ ...defs[name]!, definitions: defs }, name, {
        bannerComment: '',
        // Other definitions are declared on their own, once.
        declareExternallyReferenced: false,
        // An object that does not refuse other fields (a z.object's input side) gets an index signature.
        additionalProperties: true,
        style: { singleQuote: true, printWidth: 140 },
      });
      parts.push('', ts.trimEnd());
    }
  }
  return `${parts.join('\n')}\n`;
}

/** Every client whose committed file differs from what the schemas give, with the expected text. */
export async function staleClientTypes(): Promise<{ out: string; expected: string; actual: string | undefined }[]> {
  const stale = [];
  for (const client of CLIENTS) {
    const expected = await clientTypes(client);
    const actual = await readFile(join(ROOT, client.out), 'utf8').catch(() => undefined);
    if (actual !== expected) stale.push({ out: client.out, expected, actual });
  }
  return stale;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const client of CLIENTS) {
    await writeFile(join(ROOT, client.out), await clientTypes(client));
    console.log(`${client.out} written`);
  }
}
