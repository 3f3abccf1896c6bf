// The React provider (beta): <SvcProvider> starts the browser SDK (@svc/browser) once the page is
// running in a browser, and useSvc() gives it to any component below. Client-only: during server
// rendering (and the first client render, so hydration matches) the hook gives null and nothing
// touches `document`; the SDK starts in an effect, which servers never run.
import { init, type Svc } from '@svc/browser';
import { createContext, createElement, useContext, useEffect, useState, type ReactNode } from 'react';

export type { LeadData, SignupResult, Svc, SvcData } from '@svc/browser';

/** Props of `<SvcProvider>`: the browser SDK's `init` options. */
export interface SvcProviderProps {
  /** The program whose clicks and signups this site records. */
  programId: string | number;
  /** Where the service answers, for example `https://track.example.com`. */
  apiUrl: string;
  /** A leading-dot root domain such as `.brand.co.uk`; the site's root domain when omitted. */
  cookieDomain?: string;
  /** Log info and warnings with the SDK's prefix (errors are always logged). */
  debug?: boolean;
  children?: ReactNode;
}

const SvcContext = createContext<Svc | null>(null);

export function SvcProvider({ programId, apiUrl, cookieDomain, debug, children }: SvcProviderProps) {
  const [svc, setSvc] = useState<Svc | null>(null);
  useEffect(() => {
    // init answers the same instance for the same options, so a second run (StrictMode) sends no second click.
    setSvc(init({ programId, apiUrl, cookieDomain, debug }));
  }, [programId, apiUrl, cookieDomain, debug]);
  return createElement(SvcContext.Provider, { value: svc }, children);
}

/** The browser SDK (`getClickId`, `signup`, `getData`), or null on the server and until it has started. */
export function useSvc(): Svc | null {
  return useContext(SvcContext);
}
