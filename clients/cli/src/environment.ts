/**
 * The one place the svc command reads its environment (the service's own config lives in
 * core/config.ts; a client package cannot import it).
 */
export const ENVIRONMENT = {
  /** Where the service answers. */
  baseUrl: 'SVC_BASE_URL',
  /** An account login token, for `programs` and `init`. */
  loginToken: 'SVC_TOKEN',
  /** A program API key, for `status` and `test-event`. */
  programKey: 'SVC_API_KEY',
} as const;

export interface Environment {
  baseUrl: string | undefined;
  loginToken: string | undefined;
  programKey: string | undefined;
  /** Where the login token is kept: $XDG_CONFIG_HOME/svc, else ~/.config/svc. */
  configDir: string;
  /** Whether a browser can be opened here. */
  hasDisplay: boolean;
  platform: NodeJS.Platform;
}

const nonEmpty = (value: string | undefined) => (value && value.trim() !== '' ? value.trim() : undefined);

export function readEnvironment(env: NodeJS.ProcessEnv = process.env): Environment {
  const home = env.HOME ?? env.USERPROFILE ?? '.';
  const xdg = nonEmpty(env.XDG_CONFIG_HOME);
  return {
    baseUrl: nonEmpty(env[ENVIRONMENT.baseUrl]),
    loginToken: nonEmpty(env[ENVIRONMENT.loginToken]),
    programKey: nonEmpty(env[ENVIRONMENT.programKey]),
    configDir: `${xdg ?? `${home}/.config`}/svc`,
    hasDisplay: process.platform === 'darwin' || process.platform === 'win32' || Boolean(env.DISPLAY || env.WAYLAND_DISPLAY),
    platform: process.platform,
  };
}
