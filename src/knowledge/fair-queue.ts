/**
 * A fair queue of work items by owner (an organization): start-time fair queuing (Goyal, Vin and Cheng,
 * "Start-time Fair Queuing", SIGCOMM 1996) with every item costing one unit. Each item gets a start tag
 * when it is queued, `max(V, the finish tag of its owner's previous item)`, where V (the virtual time) is
 * the start tag of the item taken last; its finish tag is start + 1. `shift` takes the item with the
 * smallest start tag, the earlier-queued one on a tie.
 *
 * What follows: owners with queued items take turns, one item each per round, whatever the number of
 * items each queued; an owner that was idle comes back at the current round (no credit saved up while
 * idle, no penalty either); and an item queued while another owner's item runs is taken before that
 * owner's next one. With one worker, an item of an owner with nothing else queued waits for at most the
 * running item and one item of each other owner that has items queued.
 *
 * Not thread- or process-shared: one queue per process (docs/knowledge-bases.md "Fair ingestion").
 */
export class FairQueue<T> {
  /** Queued items per owner, oldest first, with their start tags and arrival order. */
  readonly #queues = new Map<string, Array<{ item: T; start: number; seq: number }>>();
  /** Finish tag of each owner's last queued item, kept while it is ahead of the virtual time. */
  readonly #finish = new Map<string, number>();
  #virtualTime = 0;
  #seq = 0;
  #size = 0;

  /** Items queued, all owners together. */
  get size(): number {
    return this.#size;
  }

  /**
   * Owners the queue keeps state for: those with items queued, and those whose last finish tag is still
   * ahead of the virtual time (at most the owners served in the current round). Bounded by the active
   * owners, not by every owner ever seen.
   */
  get tracked(): number {
    const owners = new Set([...this.#queues.keys(), ...this.#finish.keys()]);
    return owners.size;
  }

  /** Items queued by `owner`. */
  sizeOf(owner: string): number {
    return this.#queues.get(owner)?.length ?? 0;
  }

  /** Queues `item` for `owner`. */
  push(owner: string, item: T): void {
    const start = Math.max(this.#virtualTime, this.#finish.get(owner) ?? 0);
    this.#finish.set(owner, start + 1);
    let queue = this.#queues.get(owner);
    if (queue === undefined) {
      queue = [];
      this.#queues.set(owner, queue);
    }
    queue.push({ item, start, seq: this.#seq++ });
    this.#size++;
  }

  /** Takes the next item (see the class comment), or undefined when none is queued. */
  shift(): T | undefined {
    let best: { owner: string; start: number; seq: number } | undefined;
    for (const [owner, queue] of this.#queues) {
      const head = queue[0]!;
      if (best === undefined || head.start < best.start || (head.start === best.start && head.seq < best.seq)) {
        best = { owner, start: head.start, seq: head.seq };
      }
    }
    if (best === undefined) return undefined;
    const queue = this.#queues.get(best.owner)!;
    const { item } = queue.shift()!;
    if (queue.length === 0) this.#queues.delete(best.owner);
    this.#size--;
    this.#virtualTime = best.start;
    // Owners with nothing queued whose last finish tag the virtual time has reached are forgotten: their
    // next item would start at the virtual time anyway.
    for (const [owner, finish] of this.#finish) {
      if (finish <= this.#virtualTime && !this.#queues.has(owner)) this.#finish.delete(owner);
    }
    return item;
  }

  /** Removes and returns every queued item, oldest first per owner (shutdown). */
  drain(): T[] {
    const all: Array<{ item: T; seq: number }> = [];
    for (const queue of this.#queues.values()) all.push(...queue);
    this.#queues.clear();
    this.#finish.clear();
    this.#size = 0;
    return all.sort((a, b) => a.seq - b.seq).map((e) => e.item);
  }
}
