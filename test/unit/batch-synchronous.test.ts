import { describe, it, expect } from 'vitest';
import { batchSynchronous, UNACKNOWLEDGED_WRITES } from '../../src/store/sqlite/knowledge-writes.js';
import { CONVERSATION_WRITES } from '../../src/store/sqlite/conversation-writes.js';

describe('batchSynchronous', () => {
  it('commits a batch of chunk slices, their preparation and index merges at NORMAL when FULL is configured', () => {
    expect(batchSynchronous(['chunksInsert'], 'FULL')).toBe('NORMAL');
    expect(batchSynchronous(['chunksPrepare'], 'FULL')).toBe('NORMAL');
    expect(batchSynchronous(['ftsMerge'], 'FULL')).toBe('NORMAL');
    expect(batchSynchronous(['chunksPrepare', 'chunksInsert', 'ftsMerge', 'chunksInsert'], 'FULL')).toBe('NORMAL');
  });

  it('keeps FULL for a batch with any write a client is told about: an upload, a ready document, a message', () => {
    expect(batchSynchronous(['chunksInsert', 'chunksReady'], 'FULL')).toBe('FULL');
    expect(batchSynchronous(['documentCreate'], 'FULL')).toBe('FULL');
    expect(batchSynchronous(['ftsMerge', 'createConversation'], 'FULL')).toBe('FULL');
    expect(batchSynchronous(['createConversation', 'chunksInsert'], 'FULL')).toBe('FULL');
  });

  it('never raises a configured NORMAL, and an empty batch keeps what is configured', () => {
    expect(batchSynchronous(['documentCreate', 'chunksReady'], 'NORMAL')).toBe('NORMAL');
    expect(batchSynchronous(['chunksInsert'], 'NORMAL')).toBe('NORMAL');
    expect(batchSynchronous([], 'FULL')).toBe('FULL');
    expect(batchSynchronous([], 'NORMAL')).toBe('NORMAL');
  });

  it('names the chunk writes and the lease and process writes, all of them real writes of the writer thread, and not the ones that make a document ready', () => {
    expect([...UNACKNOWLEDGED_WRITES].sort()).toEqual([
      'chunksInsert', 'chunksPrepare', 'feedPrune', 'ftsMerge', 'leaseAcquire', 'leaseRelease', 'leaseRenew',
      'processDraining', 'processHeartbeat', 'processRegister', 'processRemove',
    ]);
    for (const op of UNACKNOWLEDGED_WRITES) expect(Object.hasOwn(CONVERSATION_WRITES, op)).toBe(true);
    expect(UNACKNOWLEDGED_WRITES.has('chunksReady')).toBe(false);
    expect(UNACKNOWLEDGED_WRITES.has('documentCreate')).toBe(false);
    expect(UNACKNOWLEDGED_WRITES.has('appendMessage')).toBe(false);
    expect(UNACKNOWLEDGED_WRITES.has('startConversation')).toBe(false);
  });
});
