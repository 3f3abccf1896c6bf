/* global document */
// What the page shows now, shared by its modules: the page is one view, so its state is one object.

export const $ = (id) => document.getElementById(id);
/** The page's root: its data-state (signed-out, loading, ready...) is what the browser tests wait on. */
export const app = $('app');

export const state = {
  token: null,
  /** Who is signed in: { user, workspaces: [{ id, name, role }] } (GET /api/tracking/session). */
  me: null,
  programs: [],
  programId: null,
  /** The screen shown: overview, partners, money, commissions, settings, integrations, webhooks, audit, team, new-program. */
  screen: 'overview',
  period: '7d',
  currency: 'USD',
  hidden: new Set(),
  rows: [],
  /** Every load gets a number; an answer for an older load is dropped. */
  load: 0,
  controller: null,
};

/** The workspace of the program shown (or the first one), and the signed-in person's role there. */
export function currentWorkspace() {
  const program = state.programs.find((p) => p.id === state.programId);
  const workspaces = state.me?.workspaces ?? [];
  return workspaces.find((w) => w.id === program?.workspace_id) ?? workspaces[0] ?? null;
}

export const isOwner = () => currentWorkspace()?.role === 'owner';
