/**
 * Password hashing with argon2id (RFC 9106; API.md "Credentials": scrypt or argon2id) through
 * @node-rs/argon2, which computes on libuv's thread pool, never on the event loop's thread. A bounded
 * number of hashes run at once, so a burst of logins cannot take every core from the event loop (on a
 * 2-core machine one hash keeps a core free for streams); more wait in a bounded queue.
 */
import { hash, verify } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.js';

/**
 * argon2id parameters: 19 MiB of memory, 2 passes, 1 lane, the first configuration OWASP's Password
 * Storage Cheat Sheet recommends for argon2id (and @node-rs/argon2's default). About 20 ms per hash on
 * the 2-vCPU machine the tests run on.
 */
export const ARGON2_PARAMS = { memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 } as const;

/** Options of a PasswordHasher. */
export interface PasswordHasherOptions {
  /** Hashes (or verifications) computed at once, at least 1. */
  concurrency: number;
  /** Requests that may wait for a slot; one more is refused with AppError `overloaded` (503, Retry-After 1). */
  maxWaiting: number;
}

/**
 * Hashes and verifies passwords. Every verification costs the same whether or not the person exists:
 * `verify(null, password)` checks the password against a dummy hash with the same parameters, so the
 * response time of a login does not tell whether an e-mail has an account (API.md "Credentials": one
 * generic error, the same work for both).
 */
export class PasswordHasher {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private dummy: Promise<string> | undefined;

  constructor(private readonly opts: PasswordHasherOptions) {}

  /** Hashes currently being computed. */
  get running(): number {
    return this.active;
  }

  /** argon2id PHC string of `password` (`$argon2id$v=19$m=19456,t=2,p=1$...`). Throws AppError `overloaded` when the queue is full. */
  hash(password: string): Promise<string> {
    return this.limited(() => hash(password, ARGON2_PARAMS));
  }

  /**
   * True when `password` matches `phc`. With `phc` null (no such person, or no password set) the work
   * is done against the dummy hash and the answer is false. A malformed stored hash is false, never a
   * throw. Throws AppError `overloaded` when the queue is full.
   */
  async verify(phc: string | null, password: string): Promise<boolean> {
    const target = phc ?? await this.dummyHash();
    const ok = await this.limited(() => verify(target, password).catch(() => false));
    return phc !== null && ok;
  }

  /**
   * Makes the dummy hash now (call at start-up), so that not even the first login for an unknown e-mail
   * takes longer than one for a known one.
   */
  async prepare(): Promise<void> {
    await this.dummyHash();
  }

  /** The dummy hash: one argon2id hash of random bytes with ARGON2_PARAMS, made once. */
  private dummyHash(): Promise<string> {
    this.dummy ??= hash(randomBytes(32).toString('base64url'), ARGON2_PARAMS);
    return this.dummy;
  }

  private async limited<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.opts.concurrency) {
      if (this.waiting.length >= this.opts.maxWaiting) {
        throw new AppError('overloaded', 'Too many sign-ins are being checked at once; retry shortly.', { headers: { 'Retry-After': '1' } });
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next(); // the slot passes straight to the next waiter
      else this.active--;
    }
  }
}
