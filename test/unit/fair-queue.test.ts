import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../src/knowledge/fair-queue.js';

/** Takes every item in order. */
function drainOrder<T>(q: FairQueue<T>): T[] {
  const out: T[] = [];
  for (let item = q.shift(); item !== undefined; item = q.shift()) out.push(item);
  return out;
}

describe('FairQueue (start-time fair queuing, one unit per item)', () => {
  it('is empty at first: shift gives undefined, sizes are 0', () => {
    const q = new FairQueue<string>();
    expect(q.shift()).toBeUndefined();
    expect(q.size).toBe(0);
    expect(q.sizeOf('a')).toBe(0);
  });

  it('keeps one owner\'s items in arrival order and counts them', () => {
    const q = new FairQueue<string>();
    q.push('a', 'a1');
    q.push('a', 'a2');
    q.push('a', 'a3');
    expect(q.size).toBe(3);
    expect(q.sizeOf('a')).toBe(3);
    expect(q.sizeOf('b')).toBe(0);
    expect(q.shift()).toBe('a1');
    expect(q.size).toBe(2);
    expect(q.sizeOf('a')).toBe(2);
    expect(drainOrder(q)).toEqual(['a2', 'a3']);
    expect(q.size).toBe(0);
  });

  it('takes turns between owners, one item each per round, whatever each queued', () => {
    const q = new FairQueue<string>();
    for (const item of ['a1', 'a2', 'a3', 'a4']) q.push('a', item);
    q.push('b', 'b1');
    q.push('b', 'b2');
    q.push('c', 'c1');
    expect(drainOrder(q)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
  });

  it('puts an owner arriving while another owner\'s item runs before that owner\'s next item (the issue 35 case)', () => {
    const q = new FairQueue<string>();
    q.push('a', 'slow1');
    q.push('a', 'slow2');
    q.push('a', 'slow3');
    expect(q.shift()).toBe('slow1'); // being parsed
    q.push('b', 'small');
    expect(q.shift()).toBe('small');
    expect(drainOrder(q)).toEqual(['slow2', 'slow3']);
  });

  it('gives no extra turns to an owner that trickles items in one at a time', () => {
    const q = new FairQueue<string>();
    for (const item of ['b1', 'b2', 'b3']) q.push('b', item);
    q.push('a', 'a1');
    const order: string[] = [];
    order.push(q.shift()!); // b1
    order.push(q.shift()!); // a1
    q.push('a', 'a2'); // a sends its next one only after its last was taken
    order.push(q.shift()!);
    q.push('a', 'a3');
    order.push(q.shift()!);
    order.push(q.shift()!);
    order.push(q.shift()!);
    expect(order).toEqual(['b1', 'a1', 'b2', 'a2', 'b3', 'a3']);
  });

  it('an owner back from idle starts at the current round: no credit saved while it was away', () => {
    const q = new FairQueue<string>();
    q.push('b', 'b0');
    expect(q.shift()).toBe('b0');
    for (const item of ['a1', 'a2', 'a3', 'a4']) q.push('a', item);
    expect(q.shift()).toBe('a1');
    expect(q.shift()).toBe('a2');
    for (const item of ['b1', 'b2', 'b3']) q.push('b', item);
    // b comes back at the current round (that of a2, being served): next, then alternating with a; it gets
    // no extra turns for the rounds it missed.
    expect(drainOrder(q)).toEqual(['b1', 'a3', 'b2', 'a4', 'b3']);
  });

  it('breaks a tie of start tags by arrival: the item queued first goes first', () => {
    const q = new FairQueue<string>();
    q.push('y', 'y1');
    q.push('x', 'x1');
    q.push('x', 'x2');
    q.push('y', 'y2'); // same round as x2, queued after it
    expect(drainOrder(q)).toEqual(['y1', 'x1', 'x2', 'y2']);
  });

  it('forgets an owner once the virtual time reaches its last finish tag and it has nothing queued', () => {
    const q = new FairQueue<string>();
    expect(q.tracked).toBe(0);
    q.push('a', 'a1');
    q.push('b', 'b1');
    q.push('b', 'b2');
    expect(q.tracked).toBe(2);
    expect(q.shift()).toBe('a1');
    expect(q.tracked).toBe(2); // a's finish tag (1) is ahead of the virtual time (0)
    expect(q.shift()).toBe('b1');
    expect(q.shift()).toBe('b2'); // virtual time 1: a is forgotten, b (finish 2) not yet
    expect(q.tracked).toBe(1);
    q.push('c', 'c1'); // starts at 1
    expect(q.shift()).toBe('c1');
    expect(q.tracked).toBe(2);
    q.push('c', 'c2');
    expect(q.shift()).toBe('c2'); // virtual time 2: b forgotten
    expect(q.tracked).toBe(1);
  });

  it('drain removes everything, oldest first, and forgets the rounds', () => {
    const q = new FairQueue<string>();
    q.push('a', 'a1');
    q.push('b', 'b1');
    q.push('a', 'a2');
    expect(q.drain()).toEqual(['a1', 'b1', 'a2']);
    expect(q.size).toBe(0);
    expect(q.sizeOf('a')).toBe(0);
    expect(q.shift()).toBeUndefined();
    q.push('b', 'b2');
    q.push('a', 'a3');
    expect(drainOrder(q)).toEqual(['b2', 'a3']);
  });
});
