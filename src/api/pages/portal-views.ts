/**
 * The app portal's endpoint views: the endpoints with the add form, and one endpoint with its
 * actions, attempts, dead letters, custom headers and edit form, each action offered only to a
 * token that may take it (portal-access.ts). The messages log is in
 * portal-messages.ts, the router in portal-router.ts.
 */
export const PORTAL_VIEWS = `
/** The attempts' result chosen on each endpoint's view (its id → the API's status), for this page view and token. */
const chosenResults = new Map();
/** What the operator allows the token for the endpoint's URL (the API's bound: never below what it has). */
function rateBound(endpoint) {
  if (!endpoint || endpoint.operatorRateLimit == null) return null;
  const most = Math.max(endpoint.operatorRateLimit, endpoint.rateLimit);
  return $('span', { class: 'bound' }, '; at most ' + most + ' for this URL, as the service that sends these webhooks set it');
}

/** The add and edit form: URL, description, rate limit, channels and the event types (none ticked: every event). */
function endpointForm(types, endpoint, save) {
  const url = $('input', { type: 'url', name: 'url', required: '', placeholder: 'https://example.com/webhooks' });
  const description = $('input', { type: 'text', name: 'description', maxlength: '4096' });
  const rate = $('input', { type: 'number', name: 'rateLimit', min: '1', max: '1000000', step: '1' });
  url.value = endpoint ? endpoint.url : '';
  description.value = endpoint ? endpoint.description : '';
  rate.value = endpoint ? String(endpoint.rateLimit) : '';
  const channels = $('input', { type: 'text', name: 'channels', placeholder: 'project_1, eu' });
  channels.value = endpoint && endpoint.channels ? endpoint.channels.join(', ') : '';
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
    $('label', {}, 'Rate limit ', rate, ' requests per second at most (empty: the default)', rateBound(endpoint)),
    $('label', {}, 'Channels ', channels, ' comma-separated; letters, digits, - _ . : (empty: messages of every channel)'),
    $('fieldset', {}, $('legend', {}, 'Event types (none ticked: every event)'),
      ...(boxes.length ? boxes : [$('p', { class: 'empty' }, 'No event types are listed.')])),
    submit);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const ticked = [...form.querySelectorAll('input[name=eventType]:checked')].map((b) => b.value);
    const named = channels.value.split(',').map((c) => c.trim()).filter(Boolean);
    const body = {
      url: url.value.trim(),
      description: description.value,
      filterTypes: ticked.length ? ticked : null,
      channels: named.length ? named : null,
      // Emptied: back to the default (null); the API refuses what is not a whole number in range.
      rateLimit: rate.value.trim() === '' ? null : Number(rate.value),
    };
    act(submit, () => save(body));
  });
  return form;
}

/**
 * The header: the application's name and until when the link works. What the token may do is read
 * beside the name, not before the view's own reads: every view awaits this before drawing its
 * actions, so can() answers for this navigation's token.
 */
async function showHeader(current) {
  const [application, { expiresAt }] = await Promise.all([api('GET', appPath()), readAccess()]);
  if (!current()) return;
  document.getElementById('app-name').textContent = application.name;
  document.title = application.name + ' webhooks';
  document.getElementById('expires').textContent = expiresAt ? 'This link works until ' + when(expiresAt) : '';
}

/** What the receiver answered, folded: the status, how long it took, the body as Courier kept it. */
const responseOf = (a) =>
  a.responseStatusCode
    ? $('details', { class: 'response' }, $('summary', {}, 'Response'),
        $('p', {}, 'HTTP ' + a.responseStatusCode + ' in ' + a.responseDurationMs + ' ms'),
        a.response ? $('pre', {}, a.response) : $('p', { class: 'empty' }, 'No body.'))
    : null;
/** An attempt's row: when, what it was for (the event, or the endpoint), its result, the policy's sentence and the answer. */
const attemptRow = (a, what, ...more) =>
  $('tr', { 'data-attempt': a.id },
    $('td', {}, when(a.timestamp)),
    $('td', {}, what),
    $('td', { class: 'result ' + a.statusText }, a.statusText + (a.responseStatusCode ? ' (' + a.responseStatusCode + ')' : '')),
    $('td', {}, a.attemptNumber),
    $('td', {}, a.detail, responseOf(a)),
    ...more);
/**
 * Sends the message to the endpoint again, with its id and body, signed afresh; false for a token
 * that may not (put where $() and draw() skip it).
 */
const resendButton = (msgId, endpointId) =>
  can('resend') && button('Resend', (b) => act(b, () => api('POST', appPath() + '/msg/' + enc(msgId) + '/endpoint/' + enc(endpointId) + '/resend'), 'Resend scheduled.'),
    { 'aria-label': 'Resend ' + msgId + ' to ' + endpointId });

/**
 * How the endpoint's messages of the last 28 days stand, filled in once counted: the heaviest read
 * of the view (it grows with the endpoint's backlog, largest in an incident), so the view and its
 * actions do not wait for it, nor fail with it.
 */
function counts(id) {
  const line = $('p', { class: 'stats' }, 'Counting the messages of the last 28 days…');
  api('GET', endpointPath(id) + '/stats').then(
    (s) => {
      line.textContent = 'Messages of the last 28 days: ' + s.success + ' delivered, ' + s.pending + ' pending, ' +
        s.sending + ' sending, ' + s.fail + ' failed.';
    },
    (error) => {
      line.textContent = 'The counts are unavailable: ' + error.message;
    });
  return line;
}

async function showEndpoints(current) {
  const [types] = await Promise.all([eventTypes(), showHeader(current)]);
  const adds = can('add');
  const list = pagedTable(appPath() + '/endpoint', ['URL', 'Description', 'Status', 'Event types'], (ep) =>
    $('tr', { 'data-endpoint': ep.id },
      $('td', {}, $('a', { href: '#endpoint=' + enc(ep.id) }, ep.url)),
      $('td', {}, ep.description),
      $('td', { class: 'status ' + ep.status }, ep.status),
      $('td', {}, ep.filterTypes ? ep.filterTypes.join(', ') : 'all')),
    adds ? 'No endpoints yet: add one below.' : 'No endpoints yet.');
  await list.load();
  if (!current()) return;
  draw(
    $('h2', {}, 'Endpoints'), list.box,
    ...(adds ? [$('h2', {}, 'Add an endpoint'),
      endpointForm(types, null, async (body) => {
        const ep = await api('POST', appPath() + '/endpoint', body);
        location.hash = 'endpoint=' + enc(ep.id);
        notice('Endpoint added.', 'ok');
      })] : []));
}

async function showEndpoint(id, current) {
  const [ep, types] = await Promise.all([api('GET', endpointPath(id)), eventTypes(), showHeader(current)]);
  // Drawn again after an action: a failure to read it back is the action's to report.
  const reload = () => route(true);
  const secret = $('code', { class: 'secret' });
  const showSecret = async () => {
    secret.textContent = (await api('GET', endpointPath(id) + '/secret')).key;
  };
  // svix.ping needs no event type of its own, as in Svix's portal.
  const example = $('select', { name: 'example' },
    ...['svix.ping', ...types.filter((name) => name !== 'svix.ping')].map((name) => $('option', { value: name }, name)));
  const attemptsOf = (status) =>
    pagedTable(appPath() + '/attempt/endpoint/' + enc(id) + '?with_msg=true&with_content=false' + (status ? '&status=' + status : ''),
      ['Time', 'Event', 'Result', 'Attempt', 'Detail', ''], (a) =>
        attemptRow(a, $('a', { href: '#message=' + enc(a.msgId) }, a.msg ? a.msg.eventType : a.msgId),
          $('td', {}, a.msg && a.msg.expungedAt ? '' : resendButton(a.msgId, id))),
      status ? 'No attempts with this result.' : 'No attempts yet.');
  // Every attempt is read with the view (the endpoint's index serves it); a result is read off the
  // view's path: unindexed, it may walk the endpoint's history, and the view and its actions must
  // not wait for it. The result chosen stays with the endpoint through reloads and a way back.
  const savedResult = chosenResults.get(id) || '';
  const attempts = savedResult ? null : attemptsOf('');
  const attemptsBox = $('div', {}, attempts ? attempts.box : $('p', { class: 'empty' }, 'Reading the attempts…'));
  const result = $('select', { name: 'attemptResult' },
    $('option', { value: '' }, 'All'), $('option', { value: '0' }, 'Succeeded'), $('option', { value: '2' }, 'Failed'));
  result.value = savedResult;
  const readResult = async () => {
    const status = result.value;
    const chosen = attemptsOf(status);
    try {
      await chosen.load();
    } catch (error) {
      // A view left meanwhile takes no notice of it.
      if (attemptsBox.isConnected) throw error;
      return;
    }
    // A later choice, or a view gone, wins over this slower read.
    if (result.value === status && attemptsBox.isConnected) attemptsBox.replaceChildren(chosen.box);
  };
  result.addEventListener('change', () => {
    chosenResults.set(id, result.value);
    act(null, readResult);
  });
  const replays = can('replay');
  const replayed = (answer) =>
    answer.replayed ? answer.replayed + ' scheduled again.' : 'Nothing to replay: no dead letter with a payload left.';
  const dead = pagedTable(endpointPath(id) + '/dead-letter', ['Message', 'Attempts', 'Last error', 'Since', ''], (d) =>
    $('tr', { 'data-dead-letter': d.deliveryId },
      $('td', {}, d.msgId),
      $('td', {}, d.attempts),
      $('td', {}, d.lastError || ''),
      $('td', {}, when(d.updatedAt)),
      $('td', {}, d.payloadExpunged ? 'payload deleted: cannot be sent again' : replays && button('Replay', (b) => act(b, async () => {
        const answer = await api('POST', endpointPath(id) + '/dead-letter/replay', { deliveryIds: [d.deliveryId] });
        await reload();
        return answer;
      }, replayed)))),
    'No dead letters: nothing has failed for good.');
  await Promise.all([attempts && attempts.load(), dead.load()]);
  if (!current()) return;
  const paused = ep.status !== 'enabled';
  draw(
    $('p', {}, $('a', { href: '#' }, '← All endpoints')),
    $('h2', { class: 'endpoint-url' }, ep.url),
    ep.description ? $('p', { class: 'description' }, ep.description) : null,
    $('p', { class: 'status ' + ep.status }, ep.status + (ep.disabledReason ? ': ' + ep.disabledReason : '')),
    // The operator's hold is theirs to end: the API refuses this page's resume.
    ep.heldByOperator ? $('p', { class: 'held' }, 'Held by the service that sends these webhooks: ask them to resume it.') : null,
    counts(id),
    $('div', { class: 'actions' },
      can('pause') && !ep.heldByOperator && button(paused ? 'Resume' : 'Pause', (b) => act(b, async () => {
        await api('POST', endpointPath(id) + (paused ? '/resume' : '/pause'));
        await reload();
      }, paused ? 'Endpoint resumed.' : 'Endpoint paused.')),
      can('secret') && button('Show signing secret', (b) => act(b, showSecret)),
      can('rotate') && button('Rotate signing secret', (b) => {
        if (!confirm('Rotate the signing secret? A new one signs from now on; the current one signs too for ' + GRACE + ', so your receiver can switch without failures.')) return;
        act(b, async () => {
          const path = endpointPath(id) + '/secret/rotate';
          // False when as many earlier secrets sign as may (rotations within their grace periods).
          const rotated = (body) => api('POST', path, body).then(() => true, (error) => {
            if (error.code === 'limit_reached') return false;
            throw error;
          });
          let graceful = await rotated({});
          if (!graceful) {
            // The API then rotates only if the current secret stops signing at once: the customer chooses.
            if (!confirm(MAX_PREVIOUS_SECRETS + ' earlier signing secrets still sign, the most there can be. Rotate anyway? The current secret would stop signing at once: a receiver that has only the current secret rejects deliveries until it is given the new one.')) {
              throw new Error('Not rotated: ' + MAX_PREVIOUS_SECRETS + ' earlier secrets still sign; rotate again once one of them stops signing (' + GRACE + ' after its rotation, by default).');
            }
            // One may have stopped while the question was open: then the current one keeps its grace period.
            graceful = await rotated({});
            if (!graceful) await api('POST', path, { gracePeriodSeconds: 0 });
          }
          await showSecret();
          return graceful;
        }, (graceful) => graceful
          ? 'Signing secret rotated: the previous one signs too for ' + GRACE + '.'
          : 'Signing secret rotated: the previous one no longer signs.');
      }),
      can('remove') && button('Delete', (b) => {
        if (!confirm('Delete the endpoint ' + ep.url + '? Its messages will no longer be sent to it.')) return;
        act(b, async () => {
          await api('DELETE', endpointPath(id));
          location.hash = '';
        }, 'Endpoint deleted.');
      }, { class: 'danger' })),
    secret,
    can('example') && $('div', { class: 'actions' }, 'Send an example event: ', example,
      button('Send', (b) => act(b, () => api('POST', endpointPath(id) + '/send-example', { eventType: example.value }), 'Example sent.'))),
    $('h3', {}, 'Attempts'),
    $('div', { class: 'actions' }, $('label', {}, 'Result ', result), button('Refresh', (b) => act(b, reload))),
    attemptsBox,
    $('h3', {}, 'Dead letters'),
    replays && button('Replay all', (b) => act(b, async () => {
      const answer = await api('POST', endpointPath(id) + '/dead-letter/replay', {});
      await reload();
      return answer;
    }, replayed)), dead.box,
    can('headers') && headersEditor(id),
    can('edit') && $('details', { class: 'edit' }, $('summary', {}, 'Edit'), endpointForm(types, ep, async (body) => {
      // An unchanged URL is left out: it is checked again only when it changes. An unchanged rate
      // too: sent back as read, it would undo what the operator changed meanwhile.
      if (body.url === ep.url) delete body.url;
      if (body.rateLimit === ep.rateLimit) delete body.rateLimit;
      if (String(body.channels || []) === String(ep.channels || [])) delete body.channels;
      await api('PATCH', endpointPath(id), body);
      await reload();
      notice('Endpoint saved.', 'ok');
    })));
  // Read once the view is drawn, its failure said where the attempts go: an action's notice stays.
  if (savedResult) {
    readResult().catch((error) => {
      if (result.value === savedResult) attemptsBox.replaceChildren($('p', { class: 'empty' }, 'The attempts could not be read: ' + error.message));
    });
  }
}
`;
