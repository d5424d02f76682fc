/**
 * A turn's cancellation, without an AbortController: every live stream holds one for its whole life, and
 * an AbortController with its AbortSignal (an EventTarget: two Maps, and a hidden class of its own per
 * signal) and one abort listener costs about 900 bytes of RSS (measured here, Node 20, 50,000 of them);
 * this costs a few dozen. It has the part of the AbortSignal interface that model providers use
 * (src/models/port.ts `AbortLike`), and makes a real AbortSignal only for a consumer that needs one
 * (an HTTP tool's undici request, through {@link TurnAbort.toSignal}).
 */
import type { AbortLike, AbortListener } from '../../models/port.js';

export class TurnAbort implements AbortLike {
  #aborted = false;
  #reason: unknown = undefined;
  /** Listeners in the order added: most turns have one (the model step's), so no array until a second. */
  #listeners: AbortListener | AbortListener[] | undefined;
  /** The AbortController behind {@link toSignal}, made on the first call. */
  #controller: AbortController | undefined;

  /** Whether {@link abort} was called. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The reason given to {@link abort}; undefined before. */
  get reason(): unknown {
    return this.#reason;
  }

  /**
   * Aborts with `reason` (kept as it is, like `AbortController.abort(reason)`; an undefined reason is
   * kept undefined) and calls every listener once, in the order they were added, with no argument. A
   * listener that throws does not stop the others; its error is reported on the next tick as an
   * uncaught exception, as EventTarget does (https://dom.spec.whatwg.org/#concept-event-listener-inner-invoke
   * "report the exception"). Only the first call counts.
   */
  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners === undefined) return;
    for (const listener of Array.isArray(listeners) ? listeners : [listeners]) {
      try {
        if (typeof listener === 'function') listener();
        else listener.handleEvent();
      } catch (err) {
        process.nextTick(() => { throw err; });
      }
    }
  }

  /**
   * Calls `listener` once when the turn aborts (never when it already has: check `aborted` first, as with
   * an AbortSignal). Adding the same listener twice adds it once. Listeners are always called once;
   * `options` is accepted for the AbortSignal signature.
   */
  addEventListener(_type: 'abort', listener: AbortListener, _options?: { once?: boolean }): void {
    if (this.#aborted) return;
    const listeners = this.#listeners;
    if (listeners === undefined) this.#listeners = listener;
    else if (!Array.isArray(listeners)) {
      if (listeners !== listener) this.#listeners = [listeners, listener];
    } else if (!listeners.includes(listener)) listeners.push(listener);
  }

  /** Removes `listener` (no-op when it is not there). */
  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const listeners = this.#listeners;
    if (listeners === listener) this.#listeners = undefined;
    else if (Array.isArray(listeners)) {
      const at = listeners.indexOf(listener);
      if (at >= 0) listeners.splice(at, 1);
    }
  }

  /**
   * An AbortSignal that aborts with this one (with the same reason), for APIs that take only a real
   * signal (undici's `request`, `AbortSignal.any`). Made on the first call and reused; already aborted
   * when this is.
   */
  toSignal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.#aborted) controller.abort(this.#reason);
      else this.addEventListener('abort', () => controller.abort(this.#reason));
    }
    return this.#controller.signal;
  }
}
