// The React provider's public types. The provider and its hook are not written yet (issue 11):
// they wrap the browser SDK (clients/browser), run only in a client context, and resolve to null
// during server rendering.

/** Props of `<SvcProvider>`: the browser SDK's `init` options. */
export interface SvcProviderProps {
  /** The program whose clicks and signups this site records. */
  programId: string | number;
  /** A leading-dot root domain such as `.brand.co.uk`; the site's root domain when omitted. */
  cookieDomain?: string;
  /** Log info and warnings with the SDK's prefix (errors are always logged). */
  debug?: boolean;
}
