/**
 * The tracker script's entry, built into ../svc-tracker.js (`npm run build:tracker`) and served
 * at /js/svc-tracker.js. Loaded with
 *   <script defer src="{base_url}/js/svc-tracker.js" data-svc-program-id="<id>"></script>
 * it records the click of a `?aff=` link and exposes the SDK as `window.svc`.
 * Optional attributes: `data-svc-cookie-domain` (such as `.brand.co.uk`), `data-svc-debug`.
 */
import { createSvc, type Svc } from './core.js';

declare global {
  interface Window {
    svc?: Svc;
  }
}

try {
  const script = document.currentScript as HTMLScriptElement;
  const data = script.dataset;
  window.svc = createSvc({
    programId: data.svcProgramId!,
    // The service that served this script is the one to call.
    apiUrl: new URL(script.src).origin,
    cookieDomain: data.svcCookieDomain,
    debug: data.svcDebug != null,
  });
} catch (error) {
  console.error('[svc]', error);
}
