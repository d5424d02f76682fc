/**
 * Driver errors as API errors (src/store/mongodb/errors.ts), with the driver's own error classes: an
 * exhausted pool and an unavailable database are 503 `overloaded` with Retry-After, never a hang or a 500;
 * everything else passes through unchanged, from every method of a wrapped port.
 */
import { createRequire } from 'node:module';
import { MongoClient, MongoError, MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { LeaseLost } from '../../src/store/lease-lost.js';
import { mapDriverError, mapErrorsOf } from '../../src/store/mongodb/errors.js';
import { freePort } from '../helpers/main-process.js';

// The driver's own class for a connection checkout that waited waitQueueTimeoutMS in vain (not exported by name).
const { WaitQueueTimeoutError } = createRequire(import.meta.url)('mongodb/lib/cmap/errors.js') as { WaitQueueTimeoutError: new (message: string, address: string) => MongoError };

describe('mapDriverError', () => {
  it('pool exhaustion (waitQueueTimeoutMS) is 503 overloaded with Retry-After: 1, keeping the cause', () => {
    const cause = new WaitQueueTimeoutError('Timed out while checking out a connection from connection pool', '127.0.0.1:27017');
    const err = mapDriverError(cause) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect([err.status, err.code, err.type, err.headers]).toEqual([503, 'overloaded', 'api_error', { 'Retry-After': '1' }]);
    expect(err.message).toBe('The server has no free database connection right now; retry shortly.');
    expect(err.cause).toBe(cause);
  });

  it('no server, a network error or a failover the driver could not retry past is 503 overloaded too', async () => {
    // A real server selection error: a client of a closed loopback port.
    const client = new MongoClient(`mongodb://127.0.0.1:${await freePort()}`, { serverSelectionTimeoutMS: 100 });
    const selection = await client.connect().then(() => undefined, (e: unknown) => e);
    await client.close();
    expect(selection).toBeInstanceOf(MongoServerSelectionError);
    const transient = new MongoServerError({ code: 112, errmsg: 'WriteConflict', errorLabels: ['TransientTransactionError'] });
    const retryable = new MongoServerError({ code: 189, errmsg: 'PrimarySteppedDown', errorLabels: ['RetryableWriteError'] });
    for (const cause of [selection as MongoError, new MongoNetworkError('socket closed'), transient, retryable]) {
      const err = mapDriverError(cause) as AppError;
      expect([err.status, err.code, err.headers?.['Retry-After']]).toEqual([503, 'overloaded', '1']);
      expect(err.message).toBe('The database is not available right now (a failover?); retry shortly.');
    }
  });

  it('passes anything else through unchanged: a duplicate key, lease_lost, an AppError, a plain error', () => {
    const dup = new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key' });
    const lost = new LeaseLost('conv_1');
    const cursor = new AppError('validation_failed', 'bad cursor');
    const plain = new Error('x');
    for (const e of [dup, lost, cursor, plain, 'a string']) expect(mapDriverError(e)).toBe(e);
  });
});

describe('mapErrorsOf', () => {
  class Port {
    private readonly n = 2;
    async ok(x: number) { return x * this.n; }
    async fails() { throw new WaitQueueTimeoutError('t', 'h'); }
    throwsAtOnce(): Promise<void> { throw new MongoNetworkError('gone'); }
    plain() { return 'sync'; }
    get getter() { return 1; }
  }

  it('maps rejections and synchronous throws of every method (a class\'s too), and calls them on the port', async () => {
    const port = mapErrorsOf(new Port());
    expect(await port.ok(21)).toBe(42);
    expect(port.plain()).toBe('sync');
    await expect(port.fails()).rejects.toMatchObject({ code: 'overloaded', status: 503 });
    expect(() => port.throwsAtOnce()).toThrow(expect.objectContaining({ code: 'overloaded' }));
    expect(Object.keys(port).sort()).toEqual(['fails', 'ok', 'plain', 'throwsAtOnce']);
  });

  it('wraps the methods of a plain object', async () => {
    const port = mapErrorsOf({ get: async () => { throw new MongoServerError({ code: 11000, errmsg: 'dup' }); } });
    await expect(port.get()).rejects.toMatchObject({ code: 11000 });
  });
});
