/**
 * The partner program's HTML (issue 31): server-rendered pages that work without JavaScript, on a
 * phone (viewport meta, one fluid column, large touch targets) and with a screen reader (labels,
 * landmarks, headings in order, live status text). No script at all: forms post and links navigate.
 */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STYLE = `*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fafafa}
header,main,footer{max-width:48rem;margin:0 auto;padding:1rem}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;justify-content:space-between;border-bottom:1px solid #ddd;background:#fff;max-width:none}
header nav a{margin-right:1rem}
h1{font-size:1.5rem;margin:.5rem 0}
h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
label{display:block;font-weight:600;margin-top:1rem}
input,textarea,select,button{font:inherit;width:100%;max-width:32rem;padding:.6rem;border:1px solid #767676;border-radius:4px;background:#fff;color:#1a1a1a}
button{width:auto;min-height:44px;padding:.5rem 1.25rem;background:#0b57d0;color:#fff;border-color:#0b57d0;cursor:pointer;margin-top:1rem}
.hint{color:#444;font-size:.9rem;margin:.25rem 0 0}
.error{color:#a40000;font-weight:600}
.ok{color:#0a6b2d;font-weight:600}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:1rem;margin:1rem 0}
.table{overflow-x:auto}
table{border-collapse:collapse;width:100%;min-width:20rem}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #e3e3e3;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{word-break:break-all;background:#f0f0f0;padding:.1rem .3rem;border-radius:3px}
a{color:#0b57d0}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.5rem}
.figures div{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem .75rem}
.figures dt{font-size:.85rem;color:#444}
.figures dd{margin:0;font-size:1.3rem;font-weight:600}`;

/** One page: the language, the viewport for phones, a title, the content; no script. */
export function page(title: string, main: string, header = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${header}<main id="main">${main}</main></body></html>`;
}

export interface FormValues {
  name?: string;
  email?: string;
  website?: string;
  message?: string;
}

/** The public application form of a program (GET /apply/:programId); posts without JavaScript. */
export function applicationForm(program: { id: number; name: string }, values: FormValues = {}, error?: string): string {
  const v = (k: keyof FormValues) => escapeHtml(values[k] ?? '');
  return page(
    `Apply to ${program.name}`,
    `<h1>Apply to the ${escapeHtml(program.name)} partner program</h1>
<p>Tell the brand who you are. They review every application and will contact you by email.</p>
${error ? `<p class="error" role="alert" id="form-error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/apply/${program.id}" ${error ? 'aria-describedby="form-error"' : ''}>
<label for="name">Name</label><input id="name" name="name" required maxlength="200" autocomplete="name" value="${v('name')}">
<label for="email">Email</label><input id="email" name="email" type="email" required maxlength="254" autocomplete="email" value="${v('email')}">
<label for="website">Website <span class="hint">(optional)</span></label><input id="website" name="website" type="url" maxlength="500" autocomplete="url" value="${v('website')}">
<label for="message">Message <span class="hint">(optional)</span></label><textarea id="message" name="message" rows="5" maxlength="2000">${v('message')}</textarea>
<button type="submit">Send application</button>
</form>`,
  );
}

/** A page that answers a form or a link: a heading and a short text. */
export function notice(title: string, text: string, kind: 'ok' | 'error' = 'ok', extra = ''): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p class="${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${escapeHtml(text)}</p>${extra}`);
}
