import type { MongoClient } from 'mongodb';
import type { PoolStats } from '../ports.js';

/**
 * Counts `client`'s connection checkouts from the driver's pool events (CMAP): each checkout, the time it
 * waited (`durationMS`, whether it got a connection or not), and those that failed because no connection
 * came free within `waitQueueTimeoutMS` (reason `timeout`). Returns the counts since now.
 */
export function watchPool(client: MongoClient): () => PoolStats {
  const stats: PoolStats = { checkouts: 0, waitSeconds: 0, timeouts: 0 };
  client.on('connectionCheckedOut', (e) => {
    stats.checkouts++;
    stats.waitSeconds += e.durationMS / 1000;
  });
  client.on('connectionCheckOutFailed', (e) => {
    stats.waitSeconds += e.durationMS / 1000;
    if (e.reason === 'timeout') stats.timeouts++;
  });
  return () => ({ ...stats });
}
