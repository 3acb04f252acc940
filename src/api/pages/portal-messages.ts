/**
 * The app portal's messages log: the application's messages, newest first, each with where it stands
 * at its endpoints, by event type, channel, tag, time range and where they stand at one endpoint at
 * least, and a form that finds one by its id or event id; and one message with its payload, where
 * it stands at each endpoint (with a resend) and its attempts.
 */
export const PORTAL_MESSAGES = `
/** The list's filters the # keeps (so a reload shows the same list): the API's own query parameters. */
const MESSAGE_FILTERS = ['event_types', 'channel', 'tag', 'after', 'before', 'status'];
// Set by the filters' submit: the list drawn anew leaves the keyboard on its Show button.
let refocusFilters = false;
/** An instant as a datetime-local input shows it: the browser's local time, to the minute. */
function localInput(iso) {
  const d = new Date(iso || '');
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes());
}

/** Where a message stands at its endpoints, as the message's own view counts them: red once one has failed for good, green when all have it. */
function statusCell(counts) {
  const words = [['success', 'delivered'], ['pending', 'pending'], ['sending', 'sending'], ['fail', 'failed']];
  const said = words.filter(([state]) => counts[state] > 0).map(([state, word]) => counts[state] + ' ' + word);
  const settled = counts.fail > 0 ? ' fail' : said.length === 1 && counts.success > 0 ? ' success' : '';
  return $('td', { class: 'result' + settled }, said.join(', ') || 'no endpoint');
}

/** \`query\`: the filters after \`#messages?\`, sent to the API as they are, so it checks them. */
async function showMessages(query, current) {
  const chosen = new URLSearchParams(query || '');
  const sent = new URLSearchParams();
  for (const name of MESSAGE_FILTERS) if (chosen.get(name)) sent.set(name, chosen.get(name));
  const [types] = await Promise.all([eventTypes(), showHeader(current)]);
  const type = sent.get('event_types') || '';
  const eventType = $('select', { name: 'eventType' },
    $('option', { value: '' }, 'All'),
    ...[...new Set([...types, ...(type ? [type] : [])])].map((name) => $('option', { value: name }, name)));
  eventType.value = type;
  const text = (name) => $('input', { type: 'text', name, size: '14', placeholder: 'any' });
  const channel = text('channel');
  const tag = text('tag');
  channel.value = sent.get('channel') || '';
  tag.value = sent.get('tag') || '';
  const time = (name) => {
    const input = $('input', { type: 'datetime-local', name });
    input.value = localInput(sent.get(name));
    return input;
  };
  const after = time('after');
  const before = time('before');
  // The API's codes: those standing so at one of their endpoints at least.
  const status = $('select', { name: 'status' }, $('option', { value: '' }, 'Any'),
    ...[['2', 'Failed'], ['1', 'Pending'], ['3', 'Sending'], ['0', 'Delivered']].map(([code, word]) => $('option', { value: code }, word)));
  status.value = sent.get('status') || '';
  const filters = $('form', { class: 'actions filters' },
    $('label', {}, 'Event type ', eventType), $('label', {}, 'Channel ', channel), $('label', {}, 'Tag ', tag),
    $('label', {}, 'Sent after ', after), $('label', {}, 'and before ', before),
    $('label', {}, 'At an endpoint ', status), $('button', { type: 'submit' }, 'Show'));
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (eventType.value) next.set('event_types', eventType.value);
    if (channel.value.trim()) next.set('channel', channel.value.trim());
    if (tag.value.trim()) next.set('tag', tag.value.trim());
    for (const input of [after, before]) if (input.value) next.set(input.name, new Date(input.value).toISOString());
    if (status.value) next.set('status', status.value);
    const hash = '#messages' + (String(next) ? '?' + next : '');
    refocusFilters = true;
    // The same filters again change no #: the list is read anew all the same.
    if (location.hash === hash) route();
    else location.hash = hash;
  });
  const list = pagedTable(appPath() + '/msg?with_content=false&with_status=true' + (String(sent) ? '&' + sent : ''),
    ['Time', 'Event type', 'Event id', 'Message', 'Status'], (m) =>
      $('tr', { 'data-message': m.id },
        $('td', {}, when(m.timestamp)),
        $('td', {}, m.eventType),
        $('td', {}, m.eventId || ''),
        $('td', {}, $('a', { href: '#message=' + enc(m.id) }, m.id)),
        statusCell(m.statusCounts)),
    String(sent) ? 'No messages match these filters.' : 'No messages yet.');
  let refused = null;
  try {
    await list.load();
  } catch (error) {
    // Filters the API refuses (422): the form stays, to correct them, beside the way back to every message.
    if (error.status !== 422) throw error;
    refused = error;
  }
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
  if (refused) notice(refused.message, 'error');
  draw($('h2', {}, 'Messages'), find, filters,
    refused ? $('p', { class: 'refused' }, backLink('#messages', '← All messages')) : list.box);
  if (refocusFilters) filters.querySelector('button').focus();
  refocusFilters = false;
}

async function showMessage(id, current) {
  const [msg] = await Promise.all([api('GET', appPath() + '/msg/' + enc(id)), showHeader(current)]);
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
      msg.tags && msg.tags.length ? fact('Tags', msg.tags.join(', ')) : null,
      msg.payloadExpiresAt ? fact('Payload kept until', when(msg.payloadExpiresAt)) : null)),
    $('h3', {}, 'Payload'),
    msg.expungedAt
      ? $('p', { class: 'empty payload' }, 'Deleted ' + when(msg.expungedAt) + ' (on request, or at the end of the retention it was published with): it can no longer be sent again.')
      : $('pre', { class: 'payload' }, JSON.stringify(msg.payload, null, 2)),
    $('h3', {}, 'Endpoints'), button('Refresh', (b) => act(b, () => route(true))), destinations.box,
    $('h3', {}, 'Attempts'), attempts.box);
}
`;
