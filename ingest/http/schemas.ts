import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { M } from './messages.js';

/** A plugin's instance typed by its zod schemas (`fastify.withTypeProvider<ZodTypeProvider>()`), for route modules it hands itself to. */
export type ZodApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;

/**
 * Building blocks of the route schemas. Each field carries the spec's message for any way it can
 * be wrong, so validation answers word for word without handlers spelling messages.
 */

/** NUL and lone surrogates cannot be stored in Postgres text or jsonb: refuse them as bad input. */
export const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

/** A short, printable rendering of whatever a client sent, for echoing in a message; never throws. */
export function echo(value: unknown, max = 32): string {
  if (typeof value === 'string') return value.slice(0, max);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    return (JSON.stringify(value) ?? typeof value).slice(0, max);
  } catch {
    return Array.isArray(value) ? 'array' : typeof value;
  }
}

export const text = (max: number, message: string) =>
  z
    .string({ error: message })
    .min(1, message)
    .max(max, message)
    .refine(storable, message);

export const flag = (message: string) => z.boolean({ error: message });

/** Top-level bodies refuse unknown fields, by name. */
export const body = <T extends z.core.$ZodLooseShape>(shape: T) =>
  z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? M.body.unknownField(issue.keys) : M.body.notObject),
  });

const TEST_MODE_MESSAGE = M.body.testMode;
const PROGRAM_ID_MESSAGE = M.body.programId;

/** additional_data is an open bag: fields other than these are ignored, not stored. */
export const additionalData = z
  .object(
    {
      test_mode: flag(TEST_MODE_MESSAGE).optional(),
      program_id: z.number({ error: PROGRAM_ID_MESSAGE }).int(PROGRAM_ID_MESSAGE).positive(PROGRAM_ID_MESSAGE).max(Number.MAX_SAFE_INTEGER, PROGRAM_ID_MESSAGE).optional(),
    },
    { error: M.body.additionalData },
  )
  .optional();

const PROGRAM_ID = M.body.programIdParam;
/** Digits only: Number() would also read "0x1" or " 1" as program 1. */
export const programIdParam = z.object({
  programId: z
    .string({ error: PROGRAM_ID })
    .regex(/^[1-9][0-9]{0,14}$/, PROGRAM_ID)
    .transform(Number),
});

/** The platform envelope, for documenting error responses. */
export const PlatformError = z.object({
  data: z.null(),
  error: z.object({
    status: z.number().int(),
    name: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
    code: z.string().optional(),
  }),
});

/** The typed envelope, for documenting error responses. */
export const TypedError = z.looseObject({
  error: z.looseObject({ code: z.string(), message: z.string() }),
});
