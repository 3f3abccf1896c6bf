/* global document, navigator, setTimeout, FormData */
// Small DOM helpers the screens share: elements built with textContent only (never HTML strings),
// messages beside a form, copy buttons, a form's busy state.
import { $ } from './state.js';

/** An element with attributes (`class`, `data-*`, aria...) and children (nodes or text). */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = String(value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

/** Shows (or, with no message, hides) the message paragraph `id`. */
export function say(id, message) {
  const node = $(id);
  node.textContent = message ?? '';
  node.hidden = !message;
}

/** Runs a form's request with its buttons disabled; its error paragraph shows what failed. */
export async function submitting(form, errorId, work) {
  const buttons = [...form.querySelectorAll('button')];
  say(errorId);
  for (const b of buttons) b.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } catch (error) {
    say(errorId, error.message);
    return undefined;
  } finally {
    for (const b of buttons) b.disabled = false;
    form.removeAttribute('aria-busy');
  }
}

/** A button that copies `text()` to the clipboard and says so. */
export function wireCopy(button, text) {
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text());
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Select and copy';
    }
    setTimeout(() => (button.textContent = 'Copy'), 1500);
  });
}

/** The form's fields as an object of trimmed strings (empty fields left out). */
export function fields(form) {
  const out = {};
  for (const [key, value] of new FormData(form)) {
    const text = String(value).trim();
    if (text !== '') out[key] = text;
  }
  return out;
}
