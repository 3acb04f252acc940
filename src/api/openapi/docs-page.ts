/**
 * The browsable API reference at /docs: one self-contained page (no CDN: Courier often runs
 * without internet) that fetches /openapi.json and renders every operation, its parameters,
 * request body and responses, with schemas expanded from the components.
 */
import { DOM_HELPER, pageCsp } from '../pages/page-kit.ts';

const SCRIPT = `${DOM_HELPER}// Descriptions are CommonMark; code spans are the only markup they use, so those become <code>.
const TICK = String.fromCharCode(96);
function rich(text) {
  const parts = String(text || '').split(TICK);
  if (parts.length % 2 === 0) return $('span', {}, parts.join(TICK));
  return $('span', {}, ...parts.map((part, i) => (i % 2 ? $('code', {}, part) : part)));
}
let components = {};
const resolve = (s) => (s && s.$ref ? components[s.$ref.split('/').pop()] || {} : s || {});
const refName = (s) => (s && s.$ref ? s.$ref.split('/').pop() : null);
function typeOf(s) {
  s = resolve(s);
  if (s.anyOf) return s.anyOf.map(typeOf).join(' | ');
  const t = [].concat(s.type || (s.enum ? 'enum' : 'any')).join(' | ');
  if (t.startsWith('array') && s.items) return 'array of ' + (refName(s.items) || typeOf(s.items));
  return t + (s.format ? ' (' + s.format + ')' : '');
}
function schemaView(schema, depth = 0) {
  const name = refName(schema);
  const s = resolve(schema);
  const box = $('div', { class: 'schema' });
  if (name) box.append($('div', { class: 'name' }, name));
  if (s.description) box.append($('p', {}, rich(s.description)));
  const facts = [];
  if (s.enum) facts.push('one of: ' + s.enum.map((v) => JSON.stringify(v)).join(', '));
  for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'maxItems', 'pattern', 'default'])
    if (s[k] !== undefined) facts.push(k + ': ' + (k === 'pattern' ? s[k] : JSON.stringify(s[k])));
  if (facts.length) box.append($('p', { class: 'facts' }, facts.join(' · ')));
  const props = s.properties || (s.items && resolve(s.items).properties);
  if (props && depth < 6) {
    const required = new Set(s.required || (s.items && resolve(s.items).required) || []);
    const table = $('table', {}, $('tr', {}, $('th', {}, 'field'), $('th', {}, 'type'), $('th', {}, 'details')));
    for (const [key, prop] of Object.entries(props)) {
      const inner = resolve(prop);
      const nested = inner.properties || (inner.items && resolve(inner.items).properties);
      const details = nested ? $('details', {}, $('summary', {}, refName(prop) || 'fields'), schemaView(prop, depth + 1)) : schemaView(prop, 99);
      table.append($('tr', {}, $('td', {}, $('code', {}, key), required.has(key) ? $('span', { class: 'req' }, ' *') : null), $('td', {}, typeOf(prop)), $('td', {}, details)));
    }
    box.append(table);
  } else if (depth === 0) box.append($('p', { class: 'facts' }, typeOf(s)));
  return box;
}
function operationView(path, method, op) {
  const id = op.operationId;
  const card = $('section', { class: 'op', id }, $('h3', {}, $('span', { class: 'method ' + method }, method.toUpperCase()), ' ', $('code', {}, path), op.security && op.security.length === 0 ? $('span', { class: 'public' }, ' no token') : null));
  if (op.summary) card.append($('p', { class: 'summary' }, op.summary));
  if (op.description) card.append($('p', {}, rich(op.description)));
  if (op.parameters && op.parameters.length) {
    const table = $('table', {}, $('tr', {}, $('th', {}, 'parameter'), $('th', {}, 'in'), $('th', {}, 'type'), $('th', {}, 'description')));
    for (const p of op.parameters) table.append($('tr', {}, $('td', {}, $('code', {}, p.name), p.required ? $('span', { class: 'req' }, ' *') : null), $('td', {}, p.in), $('td', {}, typeOf(p.schema)), $('td', {}, rich(p.description), schemaView(p.schema, 99))));
    card.append($('h4', {}, 'Parameters'), table);
  }
  if (op.requestBody) card.append($('h4', {}, 'Request body (application/json)' + (op.requestBody.required ? '' : ', optional')), schemaView(op.requestBody.content['application/json'].schema));
  card.append($('h4', {}, 'Responses'));
  for (const [status, r] of Object.entries(op.responses || {})) {
    const body = r.content && r.content['application/json'];
    card.append($('details', { class: 'resp' }, $('summary', {}, $('b', {}, status), ' ', rich(r.description)), body ? schemaView(body.schema) : $('p', {}, 'No body')));
  }
  return card;
}
fetch('/openapi.json').then((r) => r.json()).then((doc) => {
  components = (doc.components && doc.components.schemas) || {};
  document.getElementById('title').textContent = doc.info.title + ' ' + doc.info.version;
  const intro = document.getElementById('intro');
  intro.textContent = '';
  intro.append(rich(doc.info.description));
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || 'Other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push([path, method, op]);
    }
  const nav = document.getElementById('nav');
  const main = document.getElementById('ops');
  for (const [tag, ops] of byTag) {
    const list = $('ul');
    for (const [path, method, op] of ops) list.append($('li', {}, $('a', { href: '#' + op.operationId }, $('span', { class: 'method ' + method }, method.toUpperCase()), ' ', op.summary || path)));
    nav.append($('h2', {}, tag), list);
    main.append($('h2', {}, tag));
    for (const [path, method, op] of ops) main.append(operationView(path, method, op));
  }
}).catch((e) => { document.getElementById('intro').textContent = 'Could not load /openapi.json: ' + e; });
`;

const STYLE = `
body { margin: 0; font: 14px/1.5 system-ui, sans-serif; color: #1d2330; display: flex; }
nav { width: 300px; height: 100vh; overflow: auto; position: sticky; top: 0; background: #f4f5f8; padding: 0 12px; box-sizing: border-box; }
nav ul { list-style: none; padding: 0; } nav a { color: inherit; text-decoration: none; display: block; padding: 2px 0; }
main { flex: 1; padding: 0 32px 64px; max-width: 1100px; }
.op { border: 1px solid #dde; border-radius: 6px; padding: 8px 16px; margin: 16px 0; }
.method { font: bold 11px monospace; padding: 2px 6px; border-radius: 3px; color: #fff; background: #666; }
.get { background: #2b7de9; } .post { background: #2a9d5c; } .put { background: #c77d00; } .patch { background: #8a5cc7; } .delete { background: #d33; }
.public { color: #2a9d5c; font-size: 12px; } .req { color: #d33; } .facts { color: #667; font-size: 12px; margin: 2px 0; }
.summary { font-weight: 600; } table { border-collapse: collapse; width: 100%; margin: 4px 0; }
td, th { border-top: 1px solid #e5e6ea; text-align: left; vertical-align: top; padding: 4px 8px; }
.schema .name { font: bold 12px monospace; color: #556; } code { font-size: 13px; } details.resp { margin: 2px 0 2px 8px; }
.schema p { margin: 2px 0; } td:first-child { white-space: nowrap; }
`;

export const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Courier API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head>
<body><nav id="nav"><h1 id="title">Courier API</h1><p><a href="/openapi.json">openapi.json</a></p></nav>
<main><p id="intro">Loading…</p><div id="ops"></div></main>
<script>${SCRIPT}</script></body></html>`;

export const DOCS_CSP = pageCsp(SCRIPT, STYLE);
