/**
 * The lists that walk an application's messages (those standing somewhere as asked, those sent to
 * one endpoint) cost what its history does: COURIER_FILTER_TIMEOUT bounds each request, so that
 * none holds a database connection for longer, and its answer says how to narrow the list.
 */
import type { Queryable } from '../store/db.ts';
import { isStatementTimeout, withStatementTimeout } from '../store/statement-timeout.ts';
import { createError } from './errors.ts';
import type { ApiDeps } from './types.ts';

const filterTimeout = createError('filter_timeout', 'The filter took too long', 422);

/** `looking` names the search ("Looking for …"); `orElse`, another way to ask, if there is one. */
export async function walkMessages<T>(
  { db, config }: ApiDeps,
  looking: string,
  orElse: string,
  read: (q: Queryable) => Promise<T>,
): Promise<T> {
  try {
    return await withStatementTimeout(db, config.filterTimeoutMs, read);
  } catch (error) {
    if (!isStatementTimeout(error)) throw error;
    throw filterTimeout(
      `${looking} took longer than COURIER_FILTER_TIMEOUT (${config.filterTimeoutMs} ms), walking the ` +
        `application's messages: bound the list with before and after, or event_types${orElse}.`,
    );
  }
}
