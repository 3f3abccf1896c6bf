// The `svc` command's public names. The commands are not written yet (issue 16); `bin` in
// package.json names the entry point they will be built to.

/** The environment variables the command reads, so CI can run it without a login. */
export const ENVIRONMENT = {
  /** Where the service answers. */
  baseUrl: 'SVC_BASE_URL',
  /** An account login token, for `programs` and `init`. */
  loginToken: 'SVC_TOKEN',
  /** A program API key, for `status` and `test-event`. */
  programKey: 'SVC_API_KEY',
} as const;

/** The commands of `svc`. */
export type CommandName = 'login' | 'logout' | 'whoami' | 'programs' | 'init' | 'status' | 'test-event';
