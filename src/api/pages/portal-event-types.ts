/**
 * The app portal's event catalogue: the event types this token sees (its feature flags decide), each
 * with its description and, folded, the JSON Schema of its latest version and that version's first
 * example, so a customer knows what an endpoint will receive before subscribing it; and a search
 * of it by words of names and descriptions.
 */
export const PORTAL_EVENT_TYPES = `
/** The latest version's schema of an event type (versions are numbered keys; one that is no object is skipped), or null. */
function latestSchema(schemas) {
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const versions = Object.keys(schemas || {})
    .filter((v) => /^[0-9]+$/.test(v) && isObject(schemas[v]))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length ? { version: versions[versions.length - 1], schema: schemas[versions[versions.length - 1]] } : null;
}

/** One event type's row: its name, description and, folded, its latest schema with that version's first example. */
function eventTypeRow(t) {
  const latest = latestSchema(t.schemas);
  const example = latest && Array.isArray(latest.schema.examples) ? latest.schema.examples[0] : undefined;
  return $('tr', { 'data-event-type': t.name },
    $('td', {}, t.name, t.deprecated ? $('span', { class: 'deprecated' }, ' (deprecated)') : null),
    $('td', {}, t.description),
    $('td', {}, latest
      ? $('details', { class: 'schema' }, $('summary', {}, 'Version ' + latest.version),
          example === undefined ? null : $('p', {}, 'Example'),
          example === undefined ? null : $('pre', { class: 'example' }, JSON.stringify(example, null, 2)),
          $('p', {}, 'JSON Schema'),
          $('pre', { class: 'json-schema' }, JSON.stringify(latest.schema, null, 2)))
      : $('span', { class: 'empty' }, 'none given')));
}

const EVENT_TYPE_HEADINGS = ['Event type', 'Description', 'Schema'];
// Set by the search's submit: the view drawn anew leaves the keyboard in its box.
let refocusSearch = false;

/**
 * \`query\`: after \`#event-types?\`, \`q\` the words searched for. Without it, the catalogue a page
 * at a time; with it, every event type read and those whose name or description holds each word
 * shown (the API has no search; a catalogue is expected to hold hundreds of types, not many thousands).
 */
async function showEventTypes(query, current) {
  // Taken at once: a draw that fails or is overtaken leaves no focus owed to a later one.
  const refocus = refocusSearch;
  refocusSearch = false;
  const wanted = (new URLSearchParams(query || '').get('q') || '').trim();
  const words = wanted.toLowerCase().split(/\\s+/).filter(Boolean);
  let box;
  if (words.length) {
    const [types] = await Promise.all([allPages('/event-type?with_content=true'), showHeader(current)]);
    const found = types.filter((t) => words.every((w) => (t.name + ' ' + (t.description || '')).toLowerCase().includes(w)));
    box = found.length
      ? tableOf(EVENT_TYPE_HEADINGS, $('tbody', {}, ...found.map(eventTypeRow)))
      : $('p', { class: 'empty' }, 'No event type matches “' + wanted + '”.');
  } else {
    const list = pagedTable('/event-type?with_content=true', EVENT_TYPE_HEADINGS, eventTypeRow, 'No event types are listed.');
    await Promise.all([list.load(), showHeader(current)]);
    box = list.box;
  }
  if (!current()) return;
  const search = $('input', { type: 'search', name: 'q', placeholder: 'invoice paid' });
  search.value = wanted;
  const form = $('form', { class: 'actions find' }, $('label', {}, 'Find an event type by name or description ', search),
    $('button', { type: 'submit' }, 'Find'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = search.value.trim();
    const hash = '#event-types' + (value ? '?' + new URLSearchParams({ q: value }) : '');
    refocusSearch = true;
    // The same search again changes no #: the catalogue is read anew all the same.
    if (location.hash === hash) route();
    else location.hash = hash;
  });
  draw($('h2', {}, 'Event types'),
    $('p', {}, 'The events an endpoint can subscribe to; an endpoint that ticks none receives them all.'),
    form,
    words.length ? $('p', {}, backLink('#event-types', '← All event types')) : null,
    box);
  if (refocus) search.focus();
}
`;
