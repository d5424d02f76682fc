/**
 * Pool waits on /metrics (docs/operations.md "What to monitor"): the MongoDB client's checkout events
 * counted (src/store/mongodb/pool-stats.ts) and exposed as parley_mongodb_pool_checkouts_total.
 */
import { ConnectionCheckedOutEvent, ConnectionCheckOutFailedEvent, MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import { watchPool } from '../../src/store/mongodb/pool-stats.js';

describe('MongoDB pool metrics', () => {
  it('counts checkouts, the time they waited, and the waits that timed out', async () => {
    // A client that never connects: the events are the driver's own classes, emitted as its pool would.
    const client = new MongoClient('mongodb://127.0.0.1:1');
    const stats = watchPool(client);
    client.emit('connectionCheckedOut', Object.assign(Object.create(ConnectionCheckedOutEvent.prototype) as ConnectionCheckedOutEvent, { durationMS: 3, connectionId: 1 }));
    client.emit('connectionCheckedOut', Object.assign(Object.create(ConnectionCheckedOutEvent.prototype) as ConnectionCheckedOutEvent, { durationMS: 1, connectionId: 2 }));
    client.emit('connectionCheckOutFailed', Object.assign(Object.create(ConnectionCheckOutFailedEvent.prototype) as ConnectionCheckOutFailedEvent, { durationMS: 1000, reason: 'timeout' }));
    client.emit('connectionCheckOutFailed', Object.assign(Object.create(ConnectionCheckOutFailedEvent.prototype) as ConnectionCheckOutFailedEvent, { durationMS: 2, reason: 'poolClosed' }));
    expect(stats()).toEqual({ checkouts: 2, waitSeconds: 1.006, timeouts: 1 });
    await client.close();
  });

  it('/metrics reads the store\'s counts at each scrape', async () => {
    const metrics = new Metrics();
    let n = 1;
    metrics.watchPool(() => ({ checkouts: n, waitSeconds: n / 2, timeouts: n - 1 }));
    expect(await metrics.text()).toContain('parley_mongodb_pool_checkouts_total{measure="checkouts"} 1\n');
    n = 4;
    const text = await metrics.text();
    expect(text).toContain('parley_mongodb_pool_checkouts_total{measure="checkouts"} 4\n');
    expect(text).toContain('parley_mongodb_pool_checkouts_total{measure="wait_seconds"} 2\n');
    expect(text).toContain('parley_mongodb_pool_checkouts_total{measure="timeouts"} 3\n');
    metrics.close();
  });
});
