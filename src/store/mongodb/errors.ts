/**
 * Driver errors as API errors: what a client is told when MongoDB cannot take a request now. Everything
 * else passes through unchanged (AppErrors such as an unknown cursor, `lease_lost`, a duplicate key that
 * the port reports as a rejection), to become what the caller makes of it.
 */
import { MongoError, MongoNetworkError, MongoServerSelectionError } from 'mongodb';
import { AppError } from '../../errors/app-error.js';

/** Seconds a client is told to wait before trying again (the `Retry-After` of a 503). */
export const RETRY_AFTER_SECONDS = 1;

/** The name the driver gives a connection checkout that waited `waitQueueTimeoutMS` in vain. */
const WAIT_QUEUE_TIMEOUT = 'MongoWaitQueueTimeoutError';

/**
 * `err` as the error a port method rejects with:
 * - no free connection within `waitQueueTimeoutMS` (the pool is exhausted): 503 `overloaded`, `Retry-After: 1`;
 * - no server to talk to within `serverSelectionTimeoutMS`, a network error, or a transient transaction or
 *   retryable write error the driver's own retries did not get past (a failover in progress): 503
 *   `overloaded` too, saying the database is unavailable;
 * - anything else: `err` itself.
 * The 503 keeps the driver's error as its `cause` (logged, never sent).
 */
export function mapDriverError(err: unknown): unknown {
  if (!(err instanceof MongoError)) return err;
  const headers = { 'Retry-After': String(RETRY_AFTER_SECONDS) };
  if (err.name === WAIT_QUEUE_TIMEOUT) {
    return new AppError('overloaded', 'The server has no free database connection right now; retry shortly.', { cause: err, headers });
  }
  if (err instanceof MongoServerSelectionError || err instanceof MongoNetworkError
    || err.hasErrorLabel('TransientTransactionError') || err.hasErrorLabel('RetryableWriteError')) {
    return new AppError('overloaded', 'The database is not available right now (a failover?); retry shortly.', { cause: err, headers });
  }
  return err;
}

/**
 * `port` with every method's rejection mapped by mapDriverError (and a synchronous throw made a
 * rejection of the same), the methods otherwise unchanged and called on `port`. Methods are those of the
 * object and of its prototypes (a class instance's too); other members are left out.
 */
export function mapErrorsOf<T extends object>(port: T): T {
  const out: Record<string, unknown> = {};
  for (let o: object | null = port; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value = Object.getOwnPropertyDescriptor(o, name)?.value as unknown;
      // `in` also skips what every object has (`constructor`, `toString`, ...) and names a subclass already gave.
      if (name in out || typeof value !== 'function') continue;
      out[name] = (...args: unknown[]) => {
        let result: unknown;
        try {
          result = (value as (...a: unknown[]) => unknown).apply(port, args);
        } catch (err) {
          throw mapDriverError(err);
        }
        return result instanceof Promise ? result.catch((err: unknown) => { throw mapDriverError(err); }) : result;
      };
    }
  }
  return out as T;
}
