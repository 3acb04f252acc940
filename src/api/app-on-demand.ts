import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { OPERATOR_APP_UID } from '../dispatch/operator-uids.ts';
import { isValidUid, newId } from '../ids.ts';
import type { Queryable } from '../store/db.ts';
import { type Application, createApplication, findApplication } from '../store/repos/applications.ts';
import { fieldError, isUniqueViolation } from './errors.ts';
import { requireApp } from './lookup.ts';
import { applicationFields } from './routes/applications.ts';
import type { ApplicationBody } from './schemas/applications.ts';

/**
 * The path's application; with Svix's `application` field (a message's, an app portal access's),
 * one that is missing is made under the path's uid, and an existing one is used as it is, the field
 * ignored. `loc` names the field in errors.
 */
export async function appOnDemand(
  deps: { db: Queryable; config: Config; clock: Clock },
  appId: string,
  wanted: ApplicationBody | null | undefined,
  loc: string[],
): Promise<Application> {
  const { db, config, clock } = deps;
  const found = await findApplication(db, appId);
  if (found || !wanted || !isValidUid(appId)) return found ?? requireApp(db, appId);
  if (wanted.uid != null && wanted.uid !== appId) {
    throw fieldError([...loc, 'uid'], `must be ${appId}, the uid in the path, or absent`);
  }
  if (appId === OPERATOR_APP_UID) {
    // The operator's events' application is found by this uid: one made here would be adopted.
    throw fieldError(
      [...loc, 'uid'],
      `the uid ${OPERATOR_APP_UID} is reserved for Courier's operator application`,
    );
  }
  const fields = { ...applicationFields(config, wanted, null, false, loc), uid: appId };
  const now = clock.now();
  try {
    return await createApplication(db, newId('app', now), fields, now);
  } catch (error) {
    // Made meanwhile under the same uid (another such request, a POST /app): that one.
    if (isUniqueViolation(error)) return requireApp(db, appId);
    throw error;
  }
}
