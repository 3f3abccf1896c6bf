import type { PaymentTrackingMode } from '../programs/programs.js';

/** What is known of a program's payment-processor connection; null while none exists. */
export interface ProcessorConnection {
  status: string;
  accountId: string | null;
  chargesEnabled: boolean;
  payoutsEnabled: boolean;
  detailsSubmitted: boolean;
  connectedAt: Date | null;
}

/** The raw status reported while a program has no processor connection. */
const PROCESSOR_NOT_CONNECTED = 'not_connected';

/**
 * The payments step of the integration checklist (dashboard status and CLI status): complete when
 * the processor connection is `connected` or the program reports sales server to server (s2s).
 * The connection is the program's processor connection (domain/payments/connections.ts), null without one.
 */
export function paymentsStep(mode: PaymentTrackingMode, connection: ProcessorConnection | null) {
  const processorConnectionStatus = connection?.status ?? PROCESSOR_NOT_CONNECTED;
  const isProcessorConnected = processorConnectionStatus === 'connected';
  const complete = isProcessorConnected || mode === 's2s';
  return {
    complete,
    statistics: {
      paymentTrackingMode: mode,
      methodReady: complete,
      processorConnectionStatus,
      isProcessorConnected,
      processorAccountId: connection?.accountId ?? null,
      chargesEnabled: connection?.chargesEnabled ?? false,
      payoutsEnabled: connection?.payoutsEnabled ?? false,
      detailsSubmitted: connection?.detailsSubmitted ?? false,
      connectionDate: connection?.connectedAt?.toISOString() ?? null,
    },
  };
}
