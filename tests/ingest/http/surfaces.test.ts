import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { refused, type Refusal } from '../../../domain/errors.js';
import { registerErrorHandling, type Surface } from '../../../ingest/http/errors.js';
import { SURFACES } from '../../../ingest/http/surfaces.js';

/** A bare app with the service's error handling and one route per surface that throws `refusal`. */
async function answerOf(surface: Surface, refusal: Refusal) {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  app.post('/refuse', { config: { surface } }, async () => {
    throw refused(refusal);
  });
  const response = await app.inject({ method: 'POST', url: '/refuse' });
  await app.close();
  return { status: response.statusCode, body: response.json() };
}

describe('surface registry', () => {
  it('a route that names no surface, or an unknown one, stops start-up', async () => {
    const app = Fastify({ logger: false });
    registerErrorHandling(app);
    app.register(async (scope) => {
      scope.get('/forgot', async () => ({ ok: true }));
    }, { prefix: '/api/v1' });
    await expect(app.ready()).rejects.toThrow(/GET \/api\/v1\/forgot names no known surface/);

    const other = Fastify({ logger: false });
    registerErrorHandling(other);
    other.register(async (scope) => {
      scope.get('/typo', { config: { surface: 'sales' as Surface } }, async () => ({ ok: true }));
    });
    await expect(other.ready()).rejects.toThrow(/\/typo names no known surface in config.surface \(got sales\)/);
  });

  it('every surface has a 500 answer that shows nothing internal', () => {
    for (const surface of Object.keys(SURFACES) as Surface[]) {
      const failed = SURFACES[surface].failed({ requestId: 'req-1', body: {} });
      expect(failed.status).toBe(500);
      expect(failed.message).not.toMatch(/Error:|at /);
    }
  });
});

describe('domain refusals, answered per surface', () => {
  it('the same refusal is worded by the surface that answers it', async () => {
    expect(await answerOf('click', { reason: 'link_not_found' })).toEqual({
      status: 400,
      body: { data: null, error: { status: 400, name: 'BadRequestError', message: 'Referral link not found', details: {} } },
    });
    expect((await answerOf('management', { reason: 'link_not_found' })).status).toBe(404);

    expect(await answerOf('lead', { reason: 'customer_not_found' })).toEqual({
      status: 400,
      body: {
        data: null,
        error: { status: 400, name: 'BadRequestError', message: 'Customer not found. Provide a valid click_id or customer_key.', details: {} },
      },
    });
    expect(await answerOf('sale', { reason: 'customer_not_found' })).toEqual({
      status: 400,
      body: {
        data: null,
        error: {
          status: 400,
          name: 'BadRequestError',
          message: 'Customer not found. Provide customer_key or click_id.',
          details: {},
          code: 'no_attribution',
        },
      },
    });
  });

  it('sale and refund add the error.code of the status; a refusal with details keeps them', async () => {
    expect(await answerOf('sale', { reason: 'duplicate_transaction', saleId: 'sale-1' })).toEqual({
      status: 409,
      body: {
        data: null,
        error: {
          status: 409,
          name: 'ConflictError',
          message: 'Duplicate transaction_id. This sale has already been recorded.',
          details: { sale_id: 'sale-1' },
          code: 'duplicate_transaction',
        },
      },
    });
    expect((await answerOf('refund', { reason: 'sale_not_found' })).body.error).toMatchObject({ status: 404, code: 'not_found' });
    expect((await answerOf('sale', { reason: 'commission_failed' })).body.error).toMatchObject({
      status: 500,
      message: 'Failed to create commission',
      code: 'internal_error',
    });
  });

  it('a disabled link is the typed 410 with its hint', async () => {
    expect(await answerOf('click', { reason: 'link_disabled' })).toEqual({
      status: 410,
      body: {
        success: false,
        message: 'This referral link is disabled',
        error: {
          code: 'link_disabled',
          message: 'This referral link is disabled',
          hint: 'The partner or the brand turned this referral link off. No click was recorded.',
        },
      },
    });
  });

  it('a lead refused for its status names the status', async () => {
    const { status, body } = await answerOf('lead', { reason: 'status_locked', status: 'conversion' });
    expect(status).toBe(400);
    expect(body.error.message).toBe('Customer status cannot be updated to lead. Current status: conversion');
  });
});
