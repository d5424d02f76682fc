/**
 * The signed-in person's session in this tab.
 *
 * - The access token lives only in memory (a variable of this object), never in storage.
 * - The refresh token is kept in localStorage, so that a reload stays signed in, and so that every tab
 *   of the dashboard uses the latest one: refresh tokens rotate, and presenting a spent one ends the
 *   whole session (docs/authentication.md "Refresh tokens rotate").
 * - One refresh at a time: within a tab, callers share the refresh in flight; across tabs, a refresh
 *   runs under a lock (the Web Locks API, or a lock in localStorage where that API is missing), and it
 *   reads the refresh token from storage only once it holds the lock, so it always sends the newest one
 *   and stores its successor before it lets go. Two tabs therefore never send the same token.
 * - The access token is refreshed about a minute before `expires_in` runs out, when the tab becomes
 *   visible again after that point, and once after a request got 401 `expired_token`.
 * - A refused refresh ends the session here and in every other tab: the refresh token is removed, and
 *   the dashboard shows the sign-in page.
 */
import { ApiError, errorOf, jsonBody, send, type MeBody, type Organization, type SessionBody, type User } from './api.js';
import { createApiClient, type ApiClient } from './client.js';
import { StorageLock } from './storage-lock.js';

/** localStorage key of the refresh token (tests read it to check that sign-out revokes it). */
export const REFRESH_TOKEN_KEY = 'parley.refresh_token';
/** localStorage key of the organization last chosen. */
export const ORGANIZATION_KEY = 'parley.org_id';
/** Name of the cross-tab refresh lock (Web Locks), and its localStorage key in the fallback. */
const LOCK_NAME = 'parley.refresh_lock';
/** Refresh this long before the access token expires, ms. */
const REFRESH_MARGIN_MS = 60_000;
/** A refresh that has not answered after this long is abandoned (the lock must not be held longer), ms. */
const REFRESH_TIMEOUT_MS = 10_000;
/** Next attempt after a refresh that could not reach the server, ms. */
const RETRY_MS = 15_000;

const ENDED = 'Your session has ended. Sign in again.';

/** What the dashboard shows follows from this. */
export type SessionState =
  | { status: 'starting' }
  | { status: 'signed-out'; notice: string | null }
  | { status: 'unreachable'; message: string }
  | { status: 'signed-in'; user: User; organizations: Organization[]; org: Organization | null };

type Outcome = 'ok' | 'ended' | 'unreachable';

/** See the file's comment. One instance per tab. */
export class Session {
  private current: SessionState = { status: 'starting' };
  private readonly listeners = new Set<(s: SessionState) => void>();
  private accessToken: string | null = null;
  /** `Date.now()` at which the access token expires. */
  private expiresAt = 0;
  private timer: number | undefined;
  private refreshing: Promise<Outcome> | undefined;
  private readonly fallbackLock: StorageLock;

  constructor(private readonly storage: Storage = window.localStorage) {
    this.fallbackLock = new StorageLock(storage, LOCK_NAME, { ttlMs: REFRESH_TIMEOUT_MS * 2 });
    window.addEventListener('storage', (e) => this.onStorage(e));
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') this.refreshIfDue();
    });
  }

  /** The current state. */
  get state(): SessionState {
    return this.current;
  }

  /** Calls `fn` on every change of state; returns the function that stops it. */
  subscribe(fn: (s: SessionState) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** On page load: resumes the stored session with a refresh, or shows the sign-in page. */
  async start(): Promise<void> {
    if (this.storage.getItem(REFRESH_TOKEN_KEY) === null) {
      this.set({ status: 'signed-out', notice: null });
      return;
    }
    this.set({ status: 'starting' });
    if (await this.refresh() === 'unreachable') {
      this.set({ status: 'unreachable', message: 'Could not reach Parley to resume your session.' });
    }
  }

  /** Signs in with e-mail and password. Throws ApiError (401 `invalid_credentials`, 429 `rate_limited`, ...). */
  async signIn(email: string, password: string): Promise<void> {
    const res = await send('/v1/auth/login', { method: 'POST', ...jsonBody({ email, password }) });
    if (!res.ok) throw await errorOf(res);
    this.apply(await res.json() as SessionBody);
  }

  /**
   * Signs out: ends the session on the server (`POST /v1/auth/logout` with the newest refresh token, read
   * under the refresh lock) and here; other tabs see the token go and show the sign-in page too.
   */
  async signOut(): Promise<void> {
    await this.exclusive(async () => {
      const token = this.storage.getItem(REFRESH_TOKEN_KEY);
      this.storage.removeItem(REFRESH_TOKEN_KEY);
      if (token !== null) {
        // 204 even for an unknown token; a failure to reach the server still signs out here.
        await send('/v1/auth/logout', { method: 'POST', ...jsonBody({ refresh_token: token }), signal: AbortSignal.timeout(REFRESH_TIMEOUT_MS) }).catch(() => undefined);
      }
    });
    this.end('You are signed out.');
  }

  /** Acts in organization `orgId` from now on, and remembers the choice for the next visit. */
  chooseOrganization(orgId: string): void {
    if (this.current.status !== 'signed-in') return;
    const org = this.current.organizations.find((o) => o.id === orgId);
    if (org === undefined) return;
    this.storage.setItem(ORGANIZATION_KEY, org.id);
    this.set({ ...this.current, org });
  }

  /** Reads the person's organizations again (`GET /v1/me`), e.g. after they left one. */
  async reloadOrganizations(): Promise<void> {
    const me = await this.request<MeBody>('GET', '/v1/me', undefined, { org: false });
    this.setPerson(me.user, me.organizations);
  }

  /**
   * The typed API client (src/web/dashboard/client.ts), sending as the signed-in person in the chosen
   * organization through {@link authorizedFetch}.
   */
  readonly api: ApiClient = createApiClient((request) => this.authorizedFetch(request));

  /**
   * Sends `request` as the signed-in person: the access token, and `X-Org-Id` of the chosen organization
   * unless `org` is false. After 401 `expired_token` it refreshes once and sends a copy again. Resolves
   * with the response whatever its status; throws ApiError `network_error` when nothing answered,
   * `session_ended` when the session is over, `no_organization` when none is chosen.
   */
  async authorizedFetch(request: Request, opts: { org?: boolean } = {}): Promise<Response> {
    const spare = request.clone();
    for (let attempt = 0; ; attempt++) {
      const headers = new Headers((attempt === 0 ? request : spare).headers);
      headers.set('Authorization', `Bearer ${await this.token()}`);
      if (opts.org !== false) headers.set('X-Org-Id', this.orgId());
      const res = await send(new Request(attempt === 0 ? request : spare, { headers }));
      if (res.status === 401 && attempt === 0 && (await errorOf(res.clone())).code === 'expired_token') {
        this.accessToken = null;
        continue;
      }
      return res;
    }
  }

  /**
   * The headers of a request as the signed-in person in the chosen organization, for what cannot go
   * through fetch (an upload with progress, on XMLHttpRequest). Throws ApiError as {@link authorizedFetch}.
   */
  async authHeaders(): Promise<Record<string, string>> {
    return { Authorization: `Bearer ${await this.token()}`, 'X-Org-Id': this.orgId() };
  }

  /** Forgets the access token, so the next request refreshes first (after a 401 `expired_token` seen elsewhere). */
  dropAccessToken(): void {
    this.accessToken = null;
  }

  /**
   * A request as the signed-in person (see {@link authorizedFetch}). Resolves with the JSON body
   * (undefined for 204); throws ApiError with the API's error code and message.
   */
  async request<T>(method: string, path: string, body?: unknown, opts: { org?: boolean } = {}): Promise<T> {
    const init: RequestInit = { method };
    if (body !== undefined) Object.assign(init, jsonBody(body));
    const res = await this.authorizedFetch(new Request(new URL(path, location.origin), init), opts);
    if (res.ok) return (res.status === 204 ? undefined : await res.json()) as T;
    throw await errorOf(res);
  }

  /** The chosen organization's id; throws ApiError `no_organization` when none is chosen. */
  private orgId(): string {
    if (this.current.status !== 'signed-in' || this.current.org === null) throw new ApiError(0, 'no_organization', 'Choose an organization first.');
    return this.current.org.id;
  }

  /** A usable access token: the one in memory, or a fresh one. Throws ApiError when there is none. */
  private async token(): Promise<string> {
    if (this.refreshing !== undefined) await this.refreshing;
    if (this.accessToken !== null && Date.now() < this.expiresAt - 5_000) return this.accessToken;
    const outcome = await this.refresh();
    if (outcome === 'ok' && this.accessToken !== null) return this.accessToken;
    if (outcome === 'ended') throw new ApiError(401, 'session_ended', ENDED);
    throw new ApiError(0, 'network_error', 'Could not reach Parley. Check your connection and try again.');
  }

  /** Refreshes now, or joins the refresh this tab already runs. */
  private refresh(): Promise<Outcome> {
    this.refreshing ??= this.exclusive(() => this.refreshHoldingLock()).finally(() => { this.refreshing = undefined; });
    return this.refreshing;
  }

  private refreshIfDue(): void {
    if (this.current.status === 'signed-in' && Date.now() >= this.expiresAt - REFRESH_MARGIN_MS) void this.refresh();
  }

  /** The refresh itself; runs only while this tab holds the cross-tab lock. */
  private async refreshHoldingLock(): Promise<Outcome> {
    const token = this.storage.getItem(REFRESH_TOKEN_KEY);
    if (token === null) {
      this.end(ENDED);
      return 'ended';
    }
    let body: SessionBody;
    try {
      const res = await send('/v1/auth/refresh', { method: 'POST', ...jsonBody({ refresh_token: token }), signal: AbortSignal.timeout(REFRESH_TIMEOUT_MS) });
      if (res.status === 429 || res.status >= 500) throw await errorOf(res);
      if (!res.ok) {
        // Refused (401 invalid_refresh_token): spent, expired or ended elsewhere. Drop it, unless another
        // tab has already put a newer one in its place.
        if (this.storage.getItem(REFRESH_TOKEN_KEY) === token) this.storage.removeItem(REFRESH_TOKEN_KEY);
        this.end(ENDED);
        return 'ended';
      }
      body = await res.json() as SessionBody;
    } catch {
      // Not refused, just not answered (offline, server restarting): keep the token and try again.
      if (this.current.status === 'signed-in') this.schedule(RETRY_MS);
      return 'unreachable';
    }
    this.apply(body);
    return 'ok';
  }

  /** Takes a new token pair: the refresh token to storage, the access token to memory, and the next refresh. */
  private apply(body: SessionBody): void {
    this.storage.setItem(REFRESH_TOKEN_KEY, body.refresh_token);
    this.accessToken = body.access_token;
    const lifetime = body.expires_in * 1000;
    this.expiresAt = Date.now() + lifetime;
    this.schedule(Math.max(lifetime / 2, lifetime - REFRESH_MARGIN_MS));
    this.setPerson(body.user, body.organizations);
  }

  /**
   * The person and their organizations; the organization acted in stays if it is still theirs, else the
   * one remembered, else their only one, else none (the dashboard asks).
   */
  private setPerson(user: User, organizations: Organization[]): void {
    const currentId = this.current.status === 'signed-in' ? this.current.org?.id : undefined;
    const remembered = this.storage.getItem(ORGANIZATION_KEY);
    const org = organizations.find((o) => o.id === currentId)
      ?? organizations.find((o) => o.id === remembered)
      ?? (organizations.length === 1 ? organizations[0]! : null);
    this.set({ status: 'signed-in', user, organizations, org });
  }

  private schedule(ms: number): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => { void this.refresh(); }, ms);
  }

  /** Forgets the session in this tab and shows the sign-in page with `notice`. */
  private end(notice: string): void {
    window.clearTimeout(this.timer);
    this.timer = undefined;
    this.accessToken = null;
    this.expiresAt = 0;
    this.set({ status: 'signed-out', notice });
  }

  /** Runs `fn` under the cross-tab refresh lock: Web Locks where the browser has them, else localStorage. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const locks = (navigator as { locks?: LockManager }).locks;
    // The lock manager resolves with what the callback's promise resolves to (its typing says Promise<Promise<T>>).
    if (locks !== undefined && typeof locks.request === 'function') return locks.request(LOCK_NAME, () => fn()) as unknown as Promise<T>;
    return this.fallbackLock.run(fn);
  }

  /** Another tab changed the stored refresh token: follow a sign-out there, or a sign-in there. */
  private onStorage(e: StorageEvent): void {
    if (e.storageArea !== this.storage || (e.key !== REFRESH_TOKEN_KEY && e.key !== null)) return;
    const stored = this.storage.getItem(REFRESH_TOKEN_KEY);
    if (stored === null && this.current.status === 'signed-in') this.end(ENDED);
    else if (stored !== null && this.current.status === 'signed-out') void this.start();
  }

  private set(s: SessionState): void {
    this.current = s;
    for (const fn of this.listeners) fn(s);
  }
}
