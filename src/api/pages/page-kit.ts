/**
 * What Courier's own pages share: one self-contained HTML document each (no CDN: Courier often runs
 * without internet), an inline script and style allowed by hash and nothing else.
 */
import { createHash } from 'node:crypto';

/**
 * `$(tag, attrs, ...children)`: builds elements; text is always text, never parsed as HTML; a child
 * left out (null, undefined or false, as in `allowed && button`) is skipped.
 */
export const DOM_HELPER = `
const kept = (part) => part != null && part !== false;
const $ = (tag, attrs = {}, ...kids) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) k === 'class' ? (el.className = v) : el.setAttribute(k, v);
  for (const kid of kids.filter(kept)) el.append(kid instanceof Node ? kid : String(kid));
  return el;
};
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * Only this page's own inline script and style may run; it may fetch only from this origin and be
 * framed only by `frameAncestors` (a CSP source list; 'none' by default).
 */
export function pageCsp(script: string, style: string, frameAncestors = "'none'"): string {
  return [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(style)}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors}`,
  ].join('; ');
}
