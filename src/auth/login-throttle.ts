/**
 * Throttling of sign-in attempts (API.md "Credentials": login failures are throttled per account and per
 * address, 429 `rate_limited` with `Retry-After`), built so that nobody can keep an account's owner out
 * (OWASP Authentication Cheat Sheet, "Account Lockout": lockout by failures alone lets an attacker deny
 * service to the account; throttle the source of the failures instead).
 *
 * Four token buckets in memory, each refilled evenly over `windowMs`:
 * - per client address, across accounts: `perAddress` failures (one address guessing many accounts);
 * - per account and address: `perAccount` failures (one address guessing one account);
 * - per account, across addresses: `accountCeiling` failures (many addresses guessing one account).
 *   Past this ceiling an attempt still goes through from an address with no failure on this account in
 *   the last `windowMs` (a "clean" address: the owner's), and is refused from every other one. So failures
 *   from other addresses never stop a correct password from a clean address, and once an account is
 *   under attack each attacking address gets at most one guess per window on it;
 * - the time of the latest failure per account and address: an address is clean for an account when it
 *   has none within `windowMs`.
 *
 * Each attempt takes its tokens before the password is checked (so concurrent guesses count too, and a
 * refused attempt costs no hash); a successful sign-in, or one that could not be checked, gives them all
 * back, so only failures count. A refused attempt takes nothing.
 */
import { AppError } from '../errors/app-error.js';
import { TokenBuckets } from './token-buckets.js';

/** Limits of a LoginThrottle. */
export interface LoginThrottleOptions {
  /** Failed attempts per account from one client address per window (the burst), at least 1. */
  perAccount: number;
  /** Failed attempts per client address per window, all accounts together, at least 1. */
  perAddress: number;
  /**
   * Failed attempts per account per window, all addresses together, at least 1; past it only addresses
   * with no failure on the account in the last window may try.
   */
  accountCeiling: number;
  /** The window, ms. */
  windowMs: number;
  /** Current time, ms (default Date.now). */
  now?: () => number;
  /**
   * Processes sharing the limits (the live processes of the store): the counters are per process, so each
   * keeps its share of every budget (TokenBucketOptions.divisor) and together they allow about the
   * configured numbers. Default 1.
   */
  processes?: () => number;
}

/** What take() returns: hand it back to refund() after a successful sign-in. */
export interface LoginAttempt {
  account: string;
  address: string;
  /** Whether the attempt took a token of the account's ceiling (not when it passed as a clean address). */
  countedOnAccount: boolean;
  /** The pair's latest failure while the attempt is being checked: its own time. */
  failure: FailureMark;
  /** The pair's latest failure before this attempt, or undefined: put back when the attempt does not count. */
  previousFailure: FailureMark | undefined;
}

/** When an attempt that may have failed was counted, ms (an object: two attempts in one ms stay apart). */
export interface FailureMark {
  at: number;
}

/** Key of an account and an address: a newline cannot occur in a normalized e-mail. */
const pairKey = (account: string, address: string) => `${account}\n${address}`;

export class LoginThrottle {
  private readonly addresses: TokenBuckets;
  private readonly pairs: TokenBuckets;
  private readonly accounts: TokenBuckets;
  /** Account and address -> its latest failure, least recently touched first (bounded). */
  private readonly latestFailure = new Map<string, FailureMark>();
  private readonly now: () => number;
  private readonly windowMs: number;
  private readonly maxKeys: number;

  constructor(opts: LoginThrottleOptions & { maxKeys?: number }) {
    const now = opts.now ?? Date.now;
    this.now = now;
    this.windowMs = opts.windowMs;
    this.maxKeys = opts.maxKeys ?? 100_000;
    const divisor = opts.processes;
    this.addresses = new TokenBuckets({ capacity: opts.perAddress, windowMs: opts.windowMs, maxKeys: this.maxKeys, now, divisor });
    this.pairs = new TokenBuckets({ capacity: opts.perAccount, windowMs: opts.windowMs, maxKeys: this.maxKeys, now, divisor });
    this.accounts = new TokenBuckets({ capacity: opts.accountCeiling, windowMs: opts.windowMs, maxKeys: this.maxKeys, now, divisor });
  }

  /**
   * Counts an attempt for `account` (a normalized e-mail) from `address`. Throws AppError `rate_limited`
   * (429) with `Retry-After` in whole seconds (at least 1) when the address has used its failures, or the
   * address has used its failures on this account, or the account is past its ceiling and the address
   * failed on it within the window; nothing is counted then.
   */
  take(account: string, address: string): LoginAttempt {
    const now = this.now();
    const pair = pairKey(account, address);
    const previousFailure = this.latestFailure.get(pair);
    const untilClean = previousFailure === undefined ? 0 : Math.max(0, previousFailure.at + this.windowMs - now);
    const waitAddress = this.addresses.take(address);
    const waitPair = this.pairs.take(pair);
    const waitAccount = this.accounts.take(account);
    const countedOnAccount = waitAccount === 0;
    // The ceiling stops only addresses that failed on this account lately (a clean address, untilClean 0,
    // gets through), until the ceiling has a token again or the address is clean, whichever comes first.
    const waitCeiling = Math.min(waitAccount, untilClean);
    if (waitAddress > 0 || waitPair > 0 || waitCeiling > 0) {
      if (waitAddress === 0) this.addresses.refund(address);
      if (waitPair === 0) this.pairs.refund(pair);
      if (countedOnAccount) this.accounts.refund(account);
      const seconds = Math.max(1, Math.ceil(Math.max(waitAddress, waitPair, waitCeiling) / 1000));
      throw new AppError('rate_limited', `Too many failed sign-ins; retry in ${seconds} s.`, { headers: { 'Retry-After': String(seconds) } });
    }
    const failure = { at: now };
    this.mark(pair, failure);
    return { account, address, countedOnAccount, failure, previousFailure };
  }

  /**
   * The attempt does not count: it succeeded, or it was never checked (the server was overloaded or
   * failed). Gives back every token it took, and the address's latest failure on the account is what it
   * was before (unless a later attempt has marked one since).
   */
  refund(attempt: LoginAttempt): void {
    const pair = pairKey(attempt.account, attempt.address);
    this.addresses.refund(attempt.address);
    this.pairs.refund(pair);
    if (attempt.countedOnAccount) this.accounts.refund(attempt.account);
    if (this.latestFailure.get(pair) === attempt.failure) {
      this.latestFailure.delete(pair);
      if (attempt.previousFailure !== undefined) this.mark(pair, attempt.previousFailure);
    }
  }

  /** Sets the pair's latest failure, most recently touched last; past `maxKeys` the oldest is forgotten. */
  private mark(pair: string, failure: FailureMark): void {
    this.latestFailure.delete(pair);
    this.latestFailure.set(pair, failure);
    if (this.latestFailure.size > this.maxKeys) this.latestFailure.delete(this.latestFailure.keys().next().value!);
  }
}
