/* global document */
// What the page shows now, shared by its modules: the page is one view, so its state is one object.

export const $ = (id) => document.getElementById(id);
/** The page's root: its data-state (signed-out, loading, ready...) is what the browser tests wait on. */
export const app = $('app');

export const state = {
  token: null,
  programs: [],
  programId: null,
  period: '7d',
  currency: 'USD',
  hidden: new Set(),
  rows: [],
  /** Every load gets a number; an answer for an older load is dropped. */
  load: 0,
  controller: null,
};
