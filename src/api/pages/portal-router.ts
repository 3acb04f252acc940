/**
 * The app portal's router: the view the address's # names, drawn by the latest navigation alone;
 * and sign-out.
 */
export const PORTAL_ROUTER = `
async function signOut(b) {
  const ended = session && session.key;
  await act(b, async () => {
    try {
      await api('POST', '/auth/logout');
    } catch (error) {
      // An ended token (401) has nothing left to end: the tab is cleared all the same.
      if (error.status !== 401) throw error;
    }
    forgetSession();
    signedOut(true);
    // The token has ended: the other tabs holding it let it go too.
    if (ended) endedKeys.add(ended);
    if (tabs && ended) tabs.postMessage({ ended });
    await route();
  }, 'Signed out: this link no longer opens the page.');
}
if (tabs) {
  tabs.addEventListener('message', async (event) => {
    const message = event.data || {};
    if (message.ask && session && !endedKeys.has(session.key)) {
      tabs.postMessage({ session: { app: session.app, key: session.key } });
    }
    if (typeof message.ended !== 'string') return;
    endedKeys.add(message.ended);
    if (session && message.ended === session.key) {
      // Its owner signed out: this tab is signed out too, and asks no other tab.
      forgetSession();
      signedOut(true);
      await route();
      notice('Signed out in another tab: this link no longer opens the page.', 'ok');
    }
  });
}
document.getElementById('sign-out').addEventListener('click', (event) => signOut(event.target));

// A view's id is a path segment of the API calls it makes: '.' or '..' would be resolved away.
const ID = '((?!\\\\.\\\\.?$)[A-Za-z0-9_.-]{1,256})';
/**
 * The views the # names (the last one also when it names none), each with its menu entry and the
 * list an error leads back to (or a function of the #'s parameter giving it).
 */
const VIEWS = [
  { pattern: new RegExp('^#endpoint=' + ID + '$'), show: showEndpoint, nav: '#', back: ['#', '← All endpoints'] },
  { pattern: new RegExp('^#message=' + ID + '$'), show: showMessage, nav: '#messages', back: ['#messages', '← All messages'] },
  { pattern: /^#messages(?:\\?([^#]*))?$/, show: showMessages, nav: '#messages', back: ['#messages', '← All messages'] },
  { pattern: /^#event-types(?:\\?([^#]*))?$/, show: showEventTypes, nav: '#event-types',
    back: (query) => (new URLSearchParams(query || '').get('q') ? ['#event-types', '← All event types'] : ['#', '← All endpoints']) },
  { pattern: /^#?$/, show: (_, current) => showEndpoints(current), nav: '#' },
];

let shown = 0;
/** Draws the view the # names; \`rethrow\`: an action's reload, whose failure the action reports. */
async function route(rethrow = false) {
  const next = await findSession();
  if (!next || !session || next.key !== session.key || next.app !== session.app) {
    // Another token, or none: nothing of the previous one's view stays, its choices of results
    // included (its event types and what it may do are kept for it alone, eventTypes() and readAccess()).
    session = next;
    chosenResults.clear();
    notice('', '');
    document.getElementById('app-name').textContent = 'Webhooks';
    document.getElementById('expires').textContent = '';
    document.title = 'Webhooks';
    draw($('p', {}, session ? 'Loading…' : 'This page opens with the link your provider gives you; it holds your access.'));
  }
  // Only the latest navigation draws: a slower earlier one, overtaken by another or by a
  // sign-out, must not cover it.
  const mine = ++shown;
  const current = () => mine === shown;
  document.getElementById('sign-out').hidden = !session;
  document.getElementById('nav').hidden = !session;
  if (!session) return;
  const view = VIEWS.find((v) => v.pattern.test(location.hash)) || VIEWS[VIEWS.length - 1];
  const [, param] = view.pattern.exec(location.hash) || [];
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === view.nav) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // A navigation leaves the last view's refusal behind (an action's own reload keeps its notice,
  // and a success's stays to be read).
  if (!rethrow && document.getElementById('notice').className === 'error') notice('', '');
  main.setAttribute('aria-busy', 'true');
  try {
    await view.show(param, current);
  } catch (error) {
    if (rethrow) throw error;
    if (current()) {
      // An ended link no longer works until a time.
      if (error.status === 401) document.getElementById('expires').textContent = '';
      notice(error.message, 'error');
      // Nothing stale under the message: a view gone, the way back to its list.
      const back = typeof view.back === 'function' ? view.back(param) : view.back;
      draw(back ? $('p', {}, backLink(...back)) : null);
    }
  } finally {
    if (current()) main.setAttribute('aria-busy', 'false');
  }
}
window.addEventListener('hashchange', () => route());
route();
`;
