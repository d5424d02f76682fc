/**
 * Throttling of sign-in attempts per account and per client address (API.md "Credentials": login
 * failures are throttled per account and per address, 429 `rate_limited` with `Retry-After`).
 *
 * Each attempt takes a token from the account's bucket and from the address's bucket before the password
 * is checked (so concurrent guesses count too, and a throttled attempt costs no hash); a successful
 * sign-in, or one that could not be checked, gives both back. So in effect failures are counted: an account allows `perAccount` failed
 * attempts in a burst, then one more every `windowMs / perAccount`; an address likewise `perAddress`.
 */
import { AppError } from '../errors/app-error.js';
import { TokenBuckets } from './token-buckets.js';

/** Limits of a LoginThrottle. */
export interface LoginThrottleOptions {
  /** Failed attempts per account per window (the burst), at least 1. */
  perAccount: number;
  /** Failed attempts per client address per window, at least 1. */
  perAddress: number;
  /** The window, ms. */
  windowMs: number;
  /** Current time, ms (default Date.now). */
  now?: () => number;
}

/** What take() returns: hand it back to refund() after a successful sign-in. */
export interface LoginAttempt {
  account: string;
  address: string;
}

export class LoginThrottle {
  private readonly accounts: TokenBuckets;
  private readonly addresses: TokenBuckets;

  constructor(opts: LoginThrottleOptions) {
    const now = opts.now ?? Date.now;
    this.accounts = new TokenBuckets({ capacity: opts.perAccount, windowMs: opts.windowMs, now });
    this.addresses = new TokenBuckets({ capacity: opts.perAddress, windowMs: opts.windowMs, now });
  }

  /**
   * Counts an attempt for `account` (a normalized e-mail) from `address`. Throws AppError `rate_limited`
   * (429) with `Retry-After` in whole seconds when either bucket is empty; nothing is counted then.
   */
  take(account: string, address: string): LoginAttempt {
    const waitAccount = this.accounts.take(account);
    const waitAddress = this.addresses.take(address);
    if (waitAccount > 0 || waitAddress > 0) {
      if (waitAccount === 0) this.accounts.refund(account);
      if (waitAddress === 0) this.addresses.refund(address);
      const seconds = Math.max(1, Math.ceil(Math.max(waitAccount, waitAddress) / 1000));
      throw new AppError('rate_limited', `Too many failed sign-ins; retry in ${seconds} s.`, { headers: { 'Retry-After': String(seconds) } });
    }
    return { account, address };
  }

  /**
   * The attempt does not count against the account or the address: it succeeded, or it was never
   * checked (the server was overloaded or failed).
   */
  refund(attempt: LoginAttempt): void {
    this.accounts.refund(attempt.account);
    this.addresses.refund(attempt.address);
  }
}
