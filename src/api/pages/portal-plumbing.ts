/**
 * The app portal's plumbing: the session the link opens (`#app=…&key=…`: the token leaves the
 * address bar at once and lives in this tab's sessionStorage), calls to the API with it, notices,
 * and paged tables. Every call is the API's own, so the token's capabilities and bounds are
 * checked there and its refusals shown as they come. The views and the router are in the other
 * portal-*.ts files.
 */
import { DOM_HELPER } from './page-kit.ts';

export const PORTAL_PLUMBING = `${DOM_HELPER}
const KEY = 'courier.portal';
// The session when the tab's storage is refused (a frame whose third-party storage is blocked):
// this page view's alone.
let remembered = null;
function readSession() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('key') && hash.get('app')) {
    remembered = { app: hash.get('app'), key: hash.get('key') };
    signedOut(false);
    // Out of the address bar and this tab's history: a shared screen or a copied URL holds no token.
    history.replaceState(null, '', location.pathname + location.search);
    try {
      sessionStorage.setItem(KEY, JSON.stringify(remembered));
    } catch {}
  }
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || 'null') || remembered;
  } catch {
    return remembered;
  }
}
function forgetSession() {
  remembered = null;
  try {
    sessionStorage.removeItem(KEY);
  } catch {}
}
let session = null;
// The portal's open tabs share their session: a tab opened from another's link (a new tab, a
// view's address pasted) asks them for it rather than for the link again. Only this origin's
// pages, in the same storage partition, hear the channel; nothing is written beyond this tab.
const tabs = typeof BroadcastChannel === 'function' ? new BroadcastChannel(KEY) : null;
// Signed out in this tab or in another that held its token (kept through its reloads where the tab
// keeps storage): it takes no other tab's session until a link of its own opens it.
let signedOutHere = false;
// Tokens signed out in any tab, or found ended here: never lent nor taken, whichever tab holds them.
const endedKeys = new Set();
function signedOut(value) {
  if (value === undefined) {
    try {
      return signedOutHere || sessionStorage.getItem(KEY + '.signed-out') === '1';
    } catch {
      return signedOutHere;
    }
  }
  signedOutHere = value;
  try {
    if (value) sessionStorage.setItem(KEY + '.signed-out', '1');
    else sessionStorage.removeItem(KEY + '.signed-out');
  } catch {}
}
/** This tab's session, else one another open tab holds (the first to answer), else null. */
async function findSession() {
  const own = readSession();
  if (own || !tabs || signedOut()) return own;
  const shared = await new Promise((resolve) => {
    const take = (event) => {
      const offered = event.data && event.data.session;
      if (!offered || typeof offered.app !== 'string' || typeof offered.key !== 'string') return;
      if (endedKeys.has(offered.key)) return;
      done({ app: offered.app, key: offered.key });
    };
    const timer = setTimeout(() => done(null), 300);
    const done = (found) => {
      clearTimeout(timer);
      tabs.removeEventListener('message', take);
      resolve(found);
    };
    tabs.addEventListener('message', take);
    tabs.postMessage({ ask: true });
  });
  // Asked meanwhile by a link of its own, or signed out: those win.
  if (!shared || signedOut() || readSession()) return readSession();
  remembered = shared;
  try {
    sessionStorage.setItem(KEY, JSON.stringify(shared));
  } catch {}
  return shared;
}
const main = document.getElementById('main');
const enc = encodeURIComponent;
const appPath = (as = session) => '/app/' + enc(as.app);
const endpointPath = (id) => appPath() + '/endpoint/' + enc(id);

function notice(text, kind) {
  const box = document.getElementById('notice');
  box.textContent = text;
  box.className = text ? kind : '';
  box.setAttribute('role', kind === 'error' ? 'alert' : 'status');
}
function explain(status, data) {
  if (status === 401) return 'This link has expired or was revoked: ask for a new one.';
  if (data && Array.isArray(data.detail)) {
    return data.detail
      .map((d) => {
        const field = (d.loc || []).slice(1).join('.');
        return field ? field + ': ' + d.msg : d.msg;
      })
      .join('; ');
  }
  if (data && data.detail) return String(data.detail);
  return 'The server answered ' + status + '.';
}
/** A call with the session's token (\`as\`: the one a view started with). */
async function api(method, path, body, as = session) {
  const init = { method, headers: { authorization: 'Bearer ' + as.key } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch('/api/v1' + path, init);
  } catch {
    throw new Error('Courier could not be reached: check the connection and try again.');
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {}
  // Ended (expired or revoked; nothing revives it): not lent to another tab.
  if (response.status === 401) endedKeys.add(as.key);
  if (!response.ok) {
    throw Object.assign(new Error(explain(response.status, data)), { status: response.status, code: data && data.code });
  }
  return data;
}
/**
 * Runs an action from a button or form: the button is off while it runs; \`done\` (a text, or a
 * function of the action's result giving one) is shown after, a refusal instead.
 */
async function act(button, work, done) {
  if (button) button.disabled = true;
  notice('', '');
  try {
    const result = await work();
    const text = typeof done === 'function' ? done(result) : done;
    if (text) notice(text, 'ok');
  } catch (error) {
    notice(error.message, 'error');
  } finally {
    if (button) button.disabled = false;
  }
}
const button = (label, onClick, attrs = {}) => {
  const b = $('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', () => onClick(b));
  return b;
};
/** The way back from a view that failed; to the address shown already (no # changes), it draws it anew. */
function backLink(href, text) {
  const link = $('a', { href }, text);
  link.addEventListener('click', (event) => {
    if (href === (location.hash || '#')) {
      event.preventDefault();
      route();
    }
  });
  return link;
}
/** Replaces the view; a part left out (null or false) is skipped, not written as "null". */
const draw = (...parts) => main.replaceChildren(...parts.filter(kept));
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');

/** A table with these headings over \`body\`, a tbody. */
const tableOf = (headings, body) => $('table', {}, $('thead', {}, $('tr', {}, ...headings.map((h) => $('th', {}, h)))), body);
/** A table of a list route's pages: the first at once, the next ones on "Load more". */
function pagedTable(path, headings, row, empty) {
  const body = $('tbody');
  const table = tableOf(headings, body);
  const more = button('Load more', (b) => act(b, load), { class: 'more' });
  const box = $('div', { class: 'paged' }, table, more);
  const as = session;
  let iterator = null;
  async function load() {
    const query = (path.includes('?') ? '&' : '?') + 'limit=50' + (iterator ? '&iterator=' + enc(iterator) : '');
    const page = await api('GET', path + query, undefined, as);
    for (const item of page.data) body.append(row(item));
    iterator = page.iterator;
    more.hidden = page.done;
    if (!body.children.length) box.replaceChildren($('p', { class: 'empty' }, empty));
  }
  return { box, load };
}

/** Every item of a list the API pages (\`path\` without its limit), in the API's order. */
async function allPages(path, as = session) {
  const items = [];
  let iterator = null;
  do {
    const query = (path.includes('?') ? '&' : '?') + 'limit=250' + (iterator ? '&iterator=' + enc(iterator) : '');
    const page = await api('GET', path + query, undefined, as);
    items.push(...page.data);
    iterator = page.done ? null : page.iterator;
  } while (iterator);
  return items;
}

/** The event types this token sees (its feature flags decide), every page of them. */
let eventTypeNames = null;
async function eventTypes() {
  const as = session;
  if (eventTypeNames && eventTypeNames.as === as) return eventTypeNames.names;
  const names = (await allPages('/event-type', as)).map((t) => t.name);
  eventTypeNames = { as, names };
  return names;
}
`;
