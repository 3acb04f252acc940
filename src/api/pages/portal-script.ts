/**
 * The app portal's script: a customer's view of their own application through the API, with the
 * application's token the link carries (`#app=…&key=…`). The token leaves the address bar at once
 * and lives in this tab's sessionStorage; every call is the API's own, so the token's capabilities
 * and bounds are checked there and its refusals shown as they come.
 */
import { DOM_HELPER } from './page-kit.ts';

export const PORTAL_SCRIPT = `${DOM_HELPER}
const KEY = 'courier.portal';
function readSession() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('key') && hash.get('app')) {
    sessionStorage.setItem(KEY, JSON.stringify({ app: hash.get('app'), key: hash.get('key') }));
    // Out of the address bar and this history entry: a shared screen or a copied URL holds no token.
    history.replaceState(null, '', location.pathname + location.search);
  }
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || 'null');
  } catch {
    return null;
  }
}
let session = null;
const main = document.getElementById('main');
const enc = encodeURIComponent;
const appPath = () => '/app/' + enc(session.app);
const endpointPath = (id) => appPath() + '/endpoint/' + enc(id);

function notice(text, kind) {
  const box = document.getElementById('notice');
  box.textContent = text;
  box.className = text ? kind : '';
  box.setAttribute('role', kind === 'error' ? 'alert' : 'status');
}
function explain(status, data) {
  if (status === 401) return 'This link has expired or was revoked: ask for a new one.';
  if (data && Array.isArray(data.detail))
    return data.detail.map((d) => (d.loc || []).slice(1).join('.') + ': ' + d.msg).join('; ');
  if (data && data.detail) return String(data.detail);
  return 'The server answered ' + status + '.';
}
async function api(method, path, body) {
  const init = { method, headers: { authorization: 'Bearer ' + session.key } };
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
  if (!response.ok) throw new Error(explain(response.status, data));
  return data;
}
/** Runs an action from a button or form: its refusal is shown, the button is off while it runs. */
async function act(button, work, done) {
  if (button) button.disabled = true;
  notice('', '');
  try {
    await work();
    if (done) notice(done, 'ok');
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
/** Replaces the view; a part left out (null) is skipped, not written as "null". */
const draw = (...parts) => main.replaceChildren(...parts.filter((part) => part != null));
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');

/** A table of a list route's pages: the first at once, the next ones on "Load more". */
function pagedTable(path, headings, row, empty) {
  const body = $('tbody');
  const table = $('table', {}, $('thead', {}, $('tr', {}, ...headings.map((h) => $('th', {}, h)))), body);
  const more = $('button', { type: 'button', class: 'more' }, 'Load more');
  const box = $('div', { class: 'paged' }, table, more);
  let iterator = null;
  async function load() {
    const page = await api('GET', path + (path.includes('?') ? '&' : '?') + 'limit=50' + (iterator ? '&iterator=' + enc(iterator) : ''));
    for (const item of page.data) body.append(row(item));
    iterator = page.iterator;
    more.hidden = page.done;
    if (!body.children.length) box.replaceChildren($('p', { class: 'empty' }, empty));
  }
  more.addEventListener('click', () => act(more, load));
  return { box, load };
}

let eventTypeNames = null;
async function eventTypes() {
  if (eventTypeNames) return eventTypeNames;
  const names = [];
  let iterator = null;
  do {
    const page = await api('GET', '/event-type?limit=250' + (iterator ? '&iterator=' + enc(iterator) : ''));
    names.push(...page.data.map((t) => t.name));
    iterator = page.done ? null : page.iterator;
  } while (iterator);
  eventTypeNames = names;
  return names;
}

/** The add and edit form: URL, description and the event types (none ticked: every event). */
function endpointForm(types, endpoint, save) {
  const url = $('input', { type: 'url', name: 'url', required: '', placeholder: 'https://example.com/webhooks' });
  const description = $('input', { type: 'text', name: 'description', maxlength: '1000' });
  url.value = endpoint ? endpoint.url : '';
  description.value = endpoint ? endpoint.description : '';
  const chosen = new Set((endpoint && endpoint.filterTypes) || []);
  const boxes = types.map((name) => {
    const box = $('input', { type: 'checkbox', name: 'eventType', value: name });
    box.checked = chosen.has(name);
    return $('label', { class: 'type' }, box, ' ', name);
  });
  const submit = $('button', { type: 'submit' }, endpoint ? 'Save' : 'Add endpoint');
  const form = $('form', { class: 'endpoint-form' },
    $('label', {}, 'URL ', url),
    $('label', {}, 'Description ', description),
    $('fieldset', {}, $('legend', {}, 'Event types (none ticked: every event)'),
      ...(boxes.length ? boxes : [$('p', { class: 'empty' }, 'No event types are listed.')])),
    submit);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const ticked = [...form.querySelectorAll('input[name=eventType]:checked')].map((b) => b.value);
    const body = { url: url.value.trim(), description: description.value, filterTypes: ticked.length ? ticked : null };
    act(submit, () => save(body));
  });
  return form;
}

/** The application's name in the header, on either view. */
async function showAppName(current) {
  const application = await api('GET', appPath());
  if (!current()) return;
  document.getElementById('app-name').textContent = application.name;
  document.title = application.name + ' webhooks';
}

async function showEndpoints(current) {
  const [types] = await Promise.all([eventTypes(), showAppName(current)]);
  const list = pagedTable(appPath() + '/endpoint', ['URL', 'Description', 'Status', 'Event types'], (ep) =>
    $('tr', { 'data-endpoint': ep.id },
      $('td', {}, $('a', { href: '#endpoint=' + enc(ep.id) }, ep.url)),
      $('td', {}, ep.description),
      $('td', { class: 'status ' + ep.status }, ep.status),
      $('td', {}, ep.filterTypes ? ep.filterTypes.join(', ') : 'all')),
    'No endpoints yet: add one below.');
  await list.load();
  if (!current()) return;
  draw(
    $('h2', {}, 'Endpoints'), list.box,
    $('h2', {}, 'Add an endpoint'),
    endpointForm(types, null, async (body) => {
      const ep = await api('POST', appPath() + '/endpoint', body);
      location.hash = 'endpoint=' + enc(ep.id);
      notice('Endpoint added.', 'ok');
    }));
}

async function showEndpoint(id, current) {
  const [ep, types] = await Promise.all([api('GET', endpointPath(id)), eventTypes(), showAppName(current)]);
  const reload = () => route();
  const secret = $('code', { class: 'secret' });
  const example = $('select', { name: 'example' }, ...types.map((name) => $('option', { value: name }, name)));
  const attempts = pagedTable(appPath() + '/attempt/endpoint/' + enc(id) + '?with_msg=true',
    ['Time', 'Event', 'Result', 'Attempt', 'Detail', ''], (a) =>
      $('tr', { 'data-attempt': a.id },
        $('td', {}, when(a.timestamp)),
        $('td', {}, a.msg ? a.msg.eventType : a.msgId),
        $('td', { class: 'result ' + a.statusText }, a.statusText + (a.responseStatusCode ? ' (' + a.responseStatusCode + ')' : '')),
        $('td', {}, a.attemptNumber),
        $('td', {}, a.detail),
        $('td', {}, button('Resend', (b) => act(b, () => api('POST', appPath() + '/msg/' + enc(a.msgId) + '/endpoint/' + enc(id) + '/resend'), 'Resend scheduled.')))),
    'No attempts yet.');
  const dead = pagedTable(endpointPath(id) + '/dead-letter', ['Message', 'Attempts', 'Last error', 'Since', ''], (d) =>
    $('tr', { 'data-dead-letter': d.deliveryId },
      $('td', {}, d.msgId),
      $('td', {}, d.attempts),
      $('td', {}, d.lastError || ''),
      $('td', {}, when(d.updatedAt)),
      $('td', {}, button('Replay', (b) => act(b, async () => {
        await api('POST', endpointPath(id) + '/dead-letter/replay', { deliveryIds: [d.deliveryId] });
        await reload();
      }, 'Replay scheduled.')))),
    'No dead letters: nothing has failed for good.');
  await Promise.all([attempts.load(), dead.load()]);
  if (!current()) return;
  const paused = ep.status !== 'enabled';
  draw(
    $('p', {}, $('a', { href: '#' }, '← All endpoints')),
    $('h2', { class: 'endpoint-url' }, ep.url),
    ep.description ? $('p', { class: 'description' }, ep.description) : null,
    $('p', { class: 'status ' + ep.status }, ep.status + (ep.disabledReason ? ': ' + ep.disabledReason : '')),
    $('div', { class: 'actions' },
      button(paused ? 'Resume' : 'Pause', (b) => act(b, async () => {
        await api('POST', endpointPath(id) + (paused ? '/resume' : '/pause'));
        await reload();
      }, paused ? 'Endpoint resumed.' : 'Endpoint paused.')),
      button('Show signing secret', (b) => act(b, async () => {
        secret.textContent = (await api('GET', endpointPath(id) + '/secret')).key;
      })),
      button('Delete', (b) => {
        if (!confirm('Delete the endpoint ' + ep.url + '? Its messages will no longer be sent to it.')) return;
        act(b, async () => {
          await api('DELETE', endpointPath(id));
          location.hash = '';
        }, 'Endpoint deleted.');
      }, { class: 'danger' })),
    secret,
    $('div', { class: 'actions' }, 'Send an example event: ', example,
      button('Send', (b) => act(b, () => api('POST', endpointPath(id) + '/send-example', { eventType: example.value }), 'Example sent.'))),
    $('h3', {}, 'Attempts'), button('Refresh', (b) => act(b, reload)), attempts.box,
    $('h3', {}, 'Dead letters'),
    button('Replay all', (b) => act(b, async () => {
      const answer = await api('POST', endpointPath(id) + '/dead-letter/replay', {});
      await reload();
      notice(answer.replayed + ' scheduled again.', 'ok');
    })), dead.box,
    $('details', {}, $('summary', {}, 'Edit'), endpointForm(types, ep, async (body) => {
      await api('PATCH', endpointPath(id), body);
      await reload();
      notice('Endpoint saved.', 'ok');
    })));
}

let shown = 0;
async function route() {
  // A newer link opened in this tab is only a change of the # here: its token replaces the old.
  const next = readSession();
  // Event types are shown by the token's feature flags: another token, another list.
  if (!next || !session || next.key !== session.key) {
    eventTypeNames = null;
    if (session) notice('', '');
  }
  session = next;
  if (!session) {
    draw($('p', {}, 'This page opens with the link your provider gives you; it holds your access.'));
    return;
  }
  // Only the latest navigation draws: a slower earlier one must not cover it.
  const mine = ++shown;
  const current = () => mine === shown;
  const match = /^#endpoint=(.+)$/.exec(location.hash);
  main.setAttribute('aria-busy', 'true');
  try {
    await (match ? showEndpoint(decodeURIComponent(match[1]), current) : showEndpoints(current));
  } catch (error) {
    if (current()) notice(error.message, 'error');
  } finally {
    if (current()) main.setAttribute('aria-busy', 'false');
  }
}
window.addEventListener('hashchange', route);
route();
`;
