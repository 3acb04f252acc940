/**
 * The app portal's event catalogue: the event types this token sees (its feature flags decide), each
 * with its description and, folded, the JSON Schema of its latest version and that version's first
 * example, so a customer knows what an endpoint will receive before subscribing it.
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

async function showEventTypes(current) {
  const list = pagedTable('/event-type?with_content=true', ['Event type', 'Description', 'Schema'], (t) => {
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
  }, 'No event types are listed.');
  await Promise.all([list.load(), showHeader(current)]);
  if (!current()) return;
  draw($('h2', {}, 'Event types'),
    $('p', {}, 'The events an endpoint can subscribe to; an endpoint that ticks none receives them all.'),
    list.box);
}
`;
