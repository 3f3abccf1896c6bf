import { isIP } from 'node:net';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { createBlockedOriginRecorder } from '../../domain/programs/blocked-origins.js';
import { createClickWriter } from '../../domain/tracking/clicks.js';
import type { ZodApp } from '../http/schemas.js';
import { allowBrowser } from './browser.js';
import type { TrackingRouteDeps } from './route-deps.js';
import { ClickRequest, ClickResponse, TypedError, trackingErrors } from './schemas.js';

/**
 * The click's 200 is written directly: the handler builds it from a UUID and an integer column,
 * so the zod serializer's check of every answer (most of a click's serialization cost) can never
 * fail. The bytes are what JSON.stringify makes of the object. ClickResponse still documents it.
 */
const serializeClickOk = (body: z.infer<typeof ClickResponse>) =>
  `{"success":true,"click_id":${JSON.stringify(body.click_id)},"cookie_window_days":${body.cookie_window_days}}`;
function clickSerializers<S>(route: FastifyRouteSchemaDef<S>) {
  return route.httpStatus === '200' ? serializeClickOk : serializerCompiler(route as FastifyRouteSchemaDef<z.ZodType>);
}

/**
 * The address stored with the click (clicks.client_ip, read by the fraud rules): the one its rate
 * limit counts, an IPv4 address or an IPv6 /64. Anything else (never from a socket) is not stored,
 * so an odd value can never fail the click's batch.
 */
export function storedAddress(address: string): string | null {
  const slash = address.indexOf('/');
  return isIP(slash < 0 ? address : address.slice(0, slash)) === 0 ? null : address;
}

/** POST /click: from the tracker script (no key) or a brand's server (a key). */
export function clickRoute(app: ZodApp, deps: TrackingRouteDeps) {
  // Clicks refused for their origin are noted for the console and readiness, off the click's path.
  const blocked = createBlockedOriginRecorder(deps.db, (err) => app.log.error({ err }, 'could not note a blocked origin'));
  const clicks = createClickWriter(deps.db, { onOriginRefused: blocked.note });
  app.post(
    '/click',
    {
      config: { surface: 'click' },
      bodyLimit: deps.bodyLimit,
      onRequest: [deps.limitByIp('click', 60), deps.key('click', true)],
      onSend: deps.browserErrors,
      schema: { summary: 'Record a click on a referral link', body: ClickRequest, response: { 200: ClickResponse, 410: TypedError, ...trackingErrors } },
      serializerCompiler: clickSerializers,
    },
    async (request, reply) => {
      const { affiliate_url, additional_data } = request.body;
      deps.checkProgramId(request, additional_data?.program_id);
      const click = await clicks.record({
        affCode: affiliate_url.aff,
        affiliateUrl: affiliate_url.url,
        test: additional_data?.test_mode ?? false,
        origin: request.programKey ? undefined : request.headers.origin,
        subs: affiliate_url.subs,
        clientIp: storedAddress(request.clientAddress),
      });
      allowBrowser(request, reply);
      return { success: true as const, click_id: click.clickId, cookie_window_days: click.cookieWindowDays };
    },
  );
}
