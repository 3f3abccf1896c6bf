import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, type ZodApp } from '../http/schemas.js';

/** Retired: the processor is connected from the dashboard now, so every method answers 410. */
export function retiredRoutes(app: ZodApp) {
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/stripe-connect',
    config: { surface: 'cliRetired' },
    schema: { summary: 'Retired: always 410', response: { 410: PlatformError } },
    handler: async () => {
      throw new ApiError(410, M.cli.processorConnectGone);
    },
  });
}
