// The `svc` command's public names: the entry point is bin.ts (built to dist/bin.js, or run from
// source by bin/svc.js in this repository).

export { ENVIRONMENT, readEnvironment, type Environment } from './environment.js';
export { EXIT, buildProgram, runCli, type Io } from './program.js';

/** The commands of `svc`. */
export type CommandName = 'login' | 'logout' | 'whoami' | 'programs' | 'init' | 'status' | 'test-event';
