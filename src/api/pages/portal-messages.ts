/**
 * The app portal's messages log: the application's messages, newest first, by event type; and one
 * message with its payload, where it stands at each endpoint (with a resend) and its attempts.
 */
export const PORTAL_MESSAGES = `
let refocusFilter = false;
/** \`type\`: the event type the list shows alone (the # keeps it, so a reload shows the same). */
async function showMessages(type, current) {
  const [types] = await Promise.all([eventTypes(), showAppName(current)]);
  const filter = $('select', { name: 'eventType' },
    $('option', { value: '' }, 'All event types'),
    ...[...new Set([...types, ...(type ? [type] : [])])].map((name) => $('option', { value: name }, name)));
  filter.value = type || '';
  filter.addEventListener('change', () => {
    refocusFilter = true;
    location.hash = filter.value ? 'messages=' + enc(filter.value) : 'messages';
  });
  const list = pagedTable(appPath() + '/msg?with_content=false' + (type ? '&event_types=' + enc(type) : ''),
    ['Time', 'Event type', 'Event id', 'Message'], (m) =>
      $('tr', { 'data-message': m.id },
        $('td', {}, when(m.timestamp)),
        $('td', {}, m.eventType),
        $('td', {}, m.eventId || ''),
        $('td', {}, $('a', { href: '#message=' + enc(m.id) }, m.id))),
    type ? 'No messages of this event type.' : 'No messages yet.');
  await list.load();
  if (!current()) return;
  const wanted = $('input', { type: 'search', name: 'find', required: '', maxlength: '256', placeholder: 'msg_… or your event id' });
  const find = $('form', { class: 'actions find' }, $('label', {}, 'Find a message by its id or event id ', wanted),
    $('button', { type: 'submit' }, 'Find'));
  find.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = wanted.value.trim();
    // The API takes either in the message's path: the view asks it, and shows its 404.
    if (new RegExp('^' + ID + '$').test(value)) location.hash = 'message=' + value;
    else notice("An id or event id is letters, digits, '-', '_' and '.' (not . or ..), at most 256.", 'error');
  });
  draw($('h2', {}, 'Messages'), find, $('div', { class: 'actions' }, $('label', {}, 'Show ', filter)), list.box);
  // Drawn anew by its own change: the keyboard stays on it, to go on choosing.
  if (refocusFilter) filter.focus();
  refocusFilter = false;
}

async function showMessage(id, current) {
  const [msg] = await Promise.all([api('GET', appPath() + '/msg/' + enc(id)), showAppName(current)]);
  const destinations = pagedTable(appPath() + '/msg/' + enc(msg.id) + '/endpoint',
    ['Endpoint', 'Status', 'Attempts', 'Next attempt', ''], (d) =>
      $('tr', { 'data-endpoint': d.id },
        $('td', {}, $('a', { href: '#endpoint=' + enc(d.id) }, d.url)),
        $('td', { class: 'result ' + d.statusText }, d.statusText),
        $('td', {}, d.attempts),
        $('td', {}, when(d.nextAttempt)),
        $('td', {}, msg.expungedAt ? '' : resendButton(msg.id, d.id))),
    'No endpoint has taken this message.');
  const attempts = pagedTable(appPath() + '/attempt/msg/' + enc(msg.id) + '?with_content=false',
    ['Time', 'Endpoint', 'Result', 'Attempt', 'Detail'], (a) => attemptRow(a, a.url),
    'No attempts yet.');
  await Promise.all([destinations.load(), attempts.load()]);
  if (!current()) return;
  const fact = (label, value) => $('tr', {}, $('th', { scope: 'row' }, label), $('td', {}, value));
  draw(
    $('p', {}, $('a', { href: '#messages' }, '← All messages')),
    $('h2', { class: 'message-type' }, msg.eventType),
    $('table', { class: 'facts' }, $('tbody', {},
      fact('Message', msg.id),
      fact('Event id', msg.eventId || ''),
      fact('Time', when(msg.timestamp)),
      msg.channels && msg.channels.length ? fact('Channels', msg.channels.join(', ')) : null,
      msg.tags && msg.tags.length ? fact('Tags', msg.tags.join(', ')) : null)),
    $('h3', {}, 'Payload'),
    msg.expungedAt
      ? $('p', { class: 'empty payload' }, 'Deleted ' + when(msg.expungedAt) + ': it can no longer be sent again.')
      : $('pre', { class: 'payload' }, JSON.stringify(msg.payload, null, 2)),
    $('h3', {}, 'Endpoints'), button('Refresh', (b) => act(b, () => route(true))), destinations.box,
    $('h3', {}, 'Attempts'), attempts.box);
}
`;
