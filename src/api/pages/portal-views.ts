/**
 * The app portal's views: the endpoints with the add form, and one endpoint with its actions,
 * attempts, dead letters and edit form; and the router between them (`#endpoint=…`).
 */
export const PORTAL_VIEWS = `
/** The add and edit form: URL, description and the event types (none ticked: every event). */
function endpointForm(types, endpoint, save) {
  const url = $('input', { type: 'url', name: 'url', required: '', placeholder: 'https://example.com/webhooks' });
  const description = $('input', { type: 'text', name: 'description', maxlength: '4096' });
  url.value = endpoint ? endpoint.url : '';
  description.value = endpoint ? endpoint.description : '';
  const chosen = (endpoint && endpoint.filterTypes) || [];
  // A type the endpoint takes but the catalogue does not list (never registered, archived,
  // behind a feature flag) is shown too, ticked: saving must not drop it unseen.
  const names = [...types, ...chosen.filter((name) => !types.includes(name))];
  const boxes = names.map((name) => {
    const box = $('input', { type: 'checkbox', name: 'eventType', value: name });
    box.checked = chosen.includes(name);
    return $('label', { class: 'type' }, box, ' ', name, types.includes(name) ? null : ' (not in the catalogue)');
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
  // Drawn again after an action: a failure to read it back is the action's to report.
  const reload = () => route(true);
  const secret = $('code', { class: 'secret' });
  // svix.ping needs no event type of its own, as in Svix's portal.
  const example = $('select', { name: 'example' },
    ...['svix.ping', ...types.filter((name) => name !== 'svix.ping')].map((name) => $('option', { value: name }, name)));
  const attempts = pagedTable(appPath() + '/attempt/endpoint/' + enc(id) + '?with_msg=true&with_content=false',
    ['Time', 'Event', 'Result', 'Attempt', 'Detail', ''], (a) =>
      $('tr', { 'data-attempt': a.id },
        $('td', {}, when(a.timestamp)),
        $('td', {}, a.msg ? a.msg.eventType : a.msgId),
        $('td', { class: 'result ' + a.statusText }, a.statusText + (a.responseStatusCode ? ' (' + a.responseStatusCode + ')' : '')),
        $('td', {}, a.attemptNumber),
        $('td', {}, a.detail),
        $('td', {}, button('Resend', (b) => act(b, () => api('POST', appPath() + '/msg/' + enc(a.msgId) + '/endpoint/' + enc(id) + '/resend'), 'Resend scheduled.')))),
    'No attempts yet.');
  const replayed = (answer) =>
    answer.replayed ? answer.replayed + ' scheduled again.' : 'Nothing to replay: no dead letter with a payload left.';
  const dead = pagedTable(endpointPath(id) + '/dead-letter', ['Message', 'Attempts', 'Last error', 'Since', ''], (d) =>
    $('tr', { 'data-dead-letter': d.deliveryId },
      $('td', {}, d.msgId),
      $('td', {}, d.attempts),
      $('td', {}, d.lastError || ''),
      $('td', {}, when(d.updatedAt)),
      $('td', {}, d.payloadExpunged ? 'payload deleted: cannot be sent again' : button('Replay', (b) => act(b, async () => {
        const answer = await api('POST', endpointPath(id) + '/dead-letter/replay', { deliveryIds: [d.deliveryId] });
        await reload();
        return answer;
      }, replayed)))),
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
      return answer;
    }, replayed)), dead.box,
    $('details', {}, $('summary', {}, 'Edit'), endpointForm(types, ep, async (body) => {
      // An unchanged URL is left out: it is checked again only when it changes.
      if (body.url === ep.url) delete body.url;
      await api('PATCH', endpointPath(id), body);
      await reload();
      notice('Endpoint saved.', 'ok');
    })));
}

async function signOut(b) {
  await act(b, async () => {
    try {
      await api('POST', '/auth/logout');
    } catch (error) {
      // An ended token (401) has nothing left to end: the tab is cleared all the same.
      if (error.status !== 401) throw error;
    }
    forgetSession();
    route();
  }, 'Signed out: this link no longer opens the page.');
}
document.getElementById('sign-out').addEventListener('click', (event) => signOut(event.target));

let shown = 0;
/** Draws the view the # names; \`rethrow\`: an action's reload, whose failure the action reports. */
async function route(rethrow = false) {
  const next = readSession();
  if (!next || !session || next.key !== session.key || next.app !== session.app) {
    // Another token, or none: nothing of the previous one's view stays (its event types are
    // cached for it alone, eventTypes()).
    session = next;
    notice('', '');
    document.getElementById('app-name').textContent = 'Webhooks';
    document.title = 'Webhooks';
    draw($('p', {}, session ? 'Loading…' : 'This page opens with the link your provider gives you; it holds your access.'));
  }
  // Only the latest navigation draws: a slower earlier one, overtaken by another or by a
  // sign-out, must not cover it.
  const mine = ++shown;
  const current = () => mine === shown;
  document.getElementById('sign-out').hidden = !session;
  if (!session) return;
  const match = /^#endpoint=([A-Za-z0-9_.-]{1,256})$/.exec(location.hash);
  main.setAttribute('aria-busy', 'true');
  try {
    await (match && !/^\\.+$/.test(match[1]) ? showEndpoint(match[1], current) : showEndpoints(current));
  } catch (error) {
    if (rethrow) throw error;
    if (current()) {
      notice(error.message, 'error');
      // Nothing stale under the message: an endpoint's view gone, the way back to the list.
      draw(match ? $('p', {}, $('a', { href: '#' }, '← All endpoints')) : null);
    }
  } finally {
    if (current()) main.setAttribute('aria-busy', 'false');
  }
}
window.addEventListener('hashchange', () => route());
route();
`;
