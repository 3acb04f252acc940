/**
 * The app portal at /portal: the page an application's access link opens when no
 * COURIER_APP_PORTAL_URL is set, where a customer manages their endpoints (their headers and rate
 * limit too), sees attempts, dead letters, the application's messages and the event types, resends
 * and replays.
 */
import { pageCsp } from './page-kit.ts';
import { PORTAL_ACCESS } from './portal-access.ts';
import { PORTAL_EVENT_TYPES } from './portal-event-types.ts';
import { PORTAL_HEADERS } from './portal-headers.ts';
import { PORTAL_MESSAGES } from './portal-messages.ts';
import { PORTAL_PLUMBING } from './portal-plumbing.ts';
import { PORTAL_ROUTER } from './portal-router.ts';
import { PORTAL_VIEWS } from './portal-views.ts';

// The router last: it draws the first view as the script runs, with every view defined.
const SCRIPT =
  PORTAL_PLUMBING +
  PORTAL_ACCESS +
  PORTAL_VIEWS +
  PORTAL_HEADERS +
  PORTAL_MESSAGES +
  PORTAL_EVENT_TYPES +
  PORTAL_ROUTER;

const STYLE = `
body { margin: 0 auto; max-width: 1100px; padding: 0 24px 64px; font: 14px/1.5 system-ui, sans-serif; color: #1d2330; }
header { display: flex; align-items: baseline; gap: 12px; border-bottom: 1px solid #dde; }
header h1 { font-size: 18px; } header span { color: #667; flex: 1; } #expires { color: #667; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
td, th { border-top: 1px solid #e5e6ea; text-align: left; vertical-align: top; padding: 4px 8px; overflow-wrap: anywhere; }
.status.enabled, .result.success { color: #2a7d4c; } .status.paused, .status.disabled, .result.fail { color: #b3261e; }
#notice { padding: 6px 10px; border-radius: 4px; margin: 8px 0; } #notice:empty { display: none; }
#notice.ok { background: #e6f4ea; } #notice.error { background: #fce8e6; }
.actions { display: flex; gap: 8px; align-items: center; margin: 8px 0; flex-wrap: wrap; }
button { font: inherit; padding: 3px 10px; cursor: pointer; } button.danger { color: #b3261e; }
.secret { display: block; margin: 4px 0; } .secret:empty { display: none; }
form label { display: block; margin: 6px 0; } form input[type=url], form input[type=text] { width: 60%; font: inherit; }
fieldset { border: 1px solid #dde; margin: 6px 0; } .type { display: inline-block; margin-right: 16px; }
.empty { color: #667; } h3 { margin-top: 24px; }
nav a { margin-right: 12px; } nav a[aria-current=page] { font-weight: 600; text-decoration: none; color: inherit; }
pre.payload, pre.example, pre.json-schema { background: #f5f6f8; padding: 8px; overflow: auto; max-height: 480px; } table.facts th { width: 120px; }
`;

export const PORTAL_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Webhooks</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<style>${STYLE}</style></head>
<body><header><h1 id="app-name">Webhooks</h1><span>Your webhooks</span>
<nav id="nav" hidden><a href="#">Endpoints</a> <a href="#messages">Messages</a> <a href="#event-types">Event types</a></nav>
<small id="expires"></small><button id="sign-out" type="button" hidden>Sign out</button></header>
<div id="notice"></div><main id="main"><p>Loading…</p></main>
<script>${SCRIPT}</script></body></html>`;

/** The page's CSP: framed only by the origins COURIER_APP_PORTAL_FRAME_ANCESTORS lists (null: none). */
export const portalCsp = (frameAncestors: string | null) =>
  pageCsp(SCRIPT, STYLE, frameAncestors ?? undefined);
