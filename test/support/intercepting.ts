import type { Database } from '../../src/store/db.ts';

/** The database with every query passed through `intercept`, which runs it (or not) with run(). */
export function intercepting(
  db: Database,
  intercept: (
    sql: string,
    params: readonly unknown[] | undefined,
    run: () => Promise<unknown>,
  ) => Promise<unknown>,
): Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'query') {
        return (sql: string, params?: readonly unknown[]) =>
          intercept(sql, params, () => target.query(sql, params));
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
