/**
 * The app portal's editor of an endpoint's custom headers (often the receiver's credentials):
 * offered to a token that may read them (ManageEndpoint), and read when opened, so the endpoint's
 * view neither waits for them nor fails with them (where the API does not say what a token may do,
 * an earlier release's, the page offers the editor to every token, and a read-only one's refusal
 * shows when it is opened).
 * A credential's value is never read back (the API lists its name alone); each change is a PATCH
 * of that one header, so the hidden values stay as they are.
 */
export const PORTAL_HEADERS = `
function headersEditor(id) {
  const path = endpointPath(id) + '/headers';
  const content = $('div');
  const box = $('details', { class: 'headers' }, $('summary', {}, 'Custom headers'), content);
  const as = session;
  const change = (b, body, done) =>
    act(b, async () => {
      await api('PATCH', path, body, as);
      await load();
    }, done);
  let loads = 0;
  async function load() {
    const mine = ++loads;
    const { headers, sensitive } = await api('GET', path, undefined, as);
    // An older read answering last, or one for a view gone, draws nothing.
    if (mine !== loads || !box.isConnected) return;
    const rows = [...Object.entries(headers), ...sensitive.map((name) => [name, null])]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, value]) =>
        $('tr', { 'data-header': name },
          $('td', {}, name),
          $('td', {}, value === null ? 'hidden: a credential is never shown again' : value),
          $('td', {}, button('Remove', (b) => change(b, { headers: {}, deleteHeaders: [name] }, 'Header removed.'),
            { 'aria-label': 'Remove ' + name }))));
    const name = $('input', { type: 'text', name: 'headerName', required: '', maxlength: '256', placeholder: 'X-Example' });
    const value = $('input', { type: 'text', name: 'headerValue', required: '' });
    const save = $('button', { type: 'submit' }, 'Set header');
    const form = $('form', { class: 'header-form' }, $('label', {}, 'Name ', name), $('label', {}, 'Value ', value), save);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      change(save, { headers: { [name.value.trim()]: value.value } }, 'Header saved.');
    });
    content.replaceChildren(
      rows.length
        ? $('table', {}, $('thead', {}, $('tr', {}, $('th', {}, 'Name'), $('th', {}, 'Value'), $('th'))), $('tbody', {}, ...rows))
        : $('p', { class: 'empty' }, 'No custom headers.'),
      form);
  }
  // Read on each opening: another tab or the operator may have changed them meanwhile.
  box.addEventListener('toggle', () => {
    if (!box.open) return;
    act(null, () =>
      load().catch((error) => {
        if (box.isConnected) throw error;
      }));
  });
  return box;
}
`;
