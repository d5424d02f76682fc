/**
 * The dashboard's cross-tab lock for browsers without Web Locks (src/web/dashboard/storage-lock.ts),
 * run here on an in-memory storage: holders never overlap, a dead holder is overtaken once its entry
 * expires, and the lock is released when the work throws.
 */
import { describe, expect, it } from 'vitest';
import { StorageLock, type KeyValueStorage } from '../../src/web/dashboard/storage-lock.js';

/** One origin's localStorage, shared by the "tabs" of a test. */
function memoryStorage(): KeyValueStorage & { map: Map<string, string> } {
  const map = new Map<string, string>();
  return {
    map,
    getItem: (k) => map.get(k) ?? null,
    setItem: (k, v) => { map.set(k, v); },
    removeItem: (k) => { map.delete(k); },
  };
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('StorageLock', () => {
  it('lets one holder in at a time, even when several tabs ask at the same moment', async () => {
    const storage = memoryStorage();
    const tabs = Array.from({ length: 5 }, () => new StorageLock(storage, 'lock', { settleMs: 5, pollMs: 5 }));
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(tabs.map((tab, i) => tab.run(async () => {
      inside++;
      most = Math.max(most, inside);
      await pause(10);
      order.push(i);
      inside--;
    })));
    expect(most).toBe(1);
    expect(order.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(storage.map.has('lock')).toBe(false);
  });

  it('when two tabs both saw the lock free and both wrote, only the later writer goes in; the other waits', async () => {
    const storage = memoryStorage();
    // Tab B's first read races with tab A's write (another process): it still sees the lock free.
    let stale = true;
    const racing: KeyValueStorage = {
      getItem: (k) => (stale ? (stale = false, null) : storage.getItem(k)),
      setItem: (k, v) => storage.setItem(k, v),
      removeItem: (k) => storage.removeItem(k),
    };
    const a = new StorageLock(storage, 'lock', { settleMs: 10, pollMs: 5 });
    const b = new StorageLock(racing, 'lock', { settleMs: 10, pollMs: 5 });
    const entered: string[] = [];
    let inside = 0;
    let most = 0;
    const work = (name: string) => async () => {
      inside++;
      most = Math.max(most, inside);
      entered.push(name);
      await pause(10);
      inside--;
    };
    await Promise.all([a.run(work('a')), b.run(work('b'))]);
    expect(most).toBe(1);
    expect(entered).toEqual(['b', 'a']);
  });

  it('overtakes a holder that died once its entry has expired, and not before', async () => {
    const storage = memoryStorage();
    let now = 1_000;
    // A tab that was closed while holding the lock left its entry behind.
    storage.setItem('lock', JSON.stringify({ id: 'closed-tab', expires: 1_000 + 20_000 }));
    const tab = new StorageLock(storage, 'lock', { settleMs: 1, pollMs: 1, now: () => now });
    let ran = false;
    const running = tab.run(async () => { ran = true; });
    await pause(30);
    expect(ran).toBe(false);
    now += 20_000;
    await running;
    expect(ran).toBe(true);
  });

  it('releases the lock when the work throws', async () => {
    const storage = memoryStorage();
    const tab = new StorageLock(storage, 'lock', { settleMs: 1, pollMs: 1 });
    await expect(tab.run(async () => { throw new Error('refresh failed'); })).rejects.toThrow('refresh failed');
    expect(storage.map.has('lock')).toBe(false);
    expect(await tab.run(async () => 'next')).toBe('next');
  });

  it('does not release a lock another tab took over after this one expired', async () => {
    const storage = memoryStorage();
    const tab = new StorageLock(storage, 'lock', { settleMs: 1, pollMs: 1 });
    await tab.run(async () => {
      storage.setItem('lock', JSON.stringify({ id: 'other-tab', expires: Date.now() + 20_000 }));
    });
    expect(JSON.parse(storage.getItem('lock')!).id).toBe('other-tab');
  });

  it('by default waits 250 ms before reading its entry back, so a slow copy between tabs is seen', async () => {
    const storage = memoryStorage();
    const waits: number[] = [];
    let entryDuringWait: string | null = null;
    const tab = new StorageLock(storage, 'lock', {
      sleep: async (ms) => { waits.push(ms); entryDuringWait = storage.getItem('lock'); },
    });
    expect(await tab.run(async () => 'done')).toBe('done');
    // One wait only (the lock was free): the settle, with this tab's entry already written.
    expect(waits).toEqual([250]);
    expect(entryDuringWait).not.toBeNull();
  });

  it('while another tab holds the lock, retries every pollMs to 1.5 x pollMs, and takes it once the entry expires', async () => {
    const storage = memoryStorage();
    let clock = 1_000;
    storage.setItem('lock', JSON.stringify({ id: 'other-tab', expires: 1_000 + 1_000 }));
    const polls: number[] = [];
    const tab = new StorageLock(storage, 'lock', {
      settleMs: 7, pollMs: 100, now: () => clock,
      sleep: async (ms) => { if (ms !== 7) polls.push(ms); clock += ms; },
    });
    expect(await tab.run(async () => 'mine')).toBe('mine');
    // 1,000 ms of the other tab's entry at 100-150 ms per poll: between 7 and 10 polls.
    expect(polls.length).toBeGreaterThanOrEqual(7);
    expect(polls.length).toBeLessThanOrEqual(10);
    for (const ms of polls) {
      expect(ms).toBeGreaterThanOrEqual(100);
      expect(ms).toBeLessThanOrEqual(150);
    }
  });

  it('takes a lock whose entry is not a lock entry (not JSON, or without id and expiry)', async () => {
    for (const junk of ['not json', '{"id":5,"expires":99999999999999}', '{"id":"x"}', '{"expires":99999999999999}', 'null']) {
      const storage = memoryStorage();
      storage.setItem('lock', junk);
      let sleeps = 0;
      const tab = new StorageLock(storage, 'lock', { settleMs: 1, pollMs: 1, sleep: async () => { if (++sleeps > 5) throw new Error(`stuck behind ${junk}`); } });
      expect(await tab.run(async () => junk)).toBe(junk);
      expect(storage.map.has('lock')).toBe(false);
    }
  });

  it('tries again when its entry is gone after the settle, and copes with the work removing the entry', async () => {
    const storage = memoryStorage();
    let settles = 0;
    const tab = new StorageLock(storage, 'lock', {
      settleMs: 3, pollMs: 1,
      // The first settle: another tab released and removed the key meanwhile.
      sleep: async (ms) => { if (ms === 3 && ++settles === 1) storage.removeItem('lock'); },
    });
    expect(await tab.run(async () => { storage.removeItem('lock'); return 'ok'; })).toBe('ok');
    expect(settles).toBe(2);
  });
});
