import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';

/**
 * Readiness of this instance: `ready`, `starting` (start-up recovery or the first-start bootstrap is not
 * done yet), `draining` (SIGTERM received), or `store_unreachable`.
 */
export type Readiness = { status: 'ready'; store: string } | { status: 'starting' } | { status: 'draining' } | { status: 'store_unreachable' };

/** Headers of a 401 from /metrics (RFC 6750 section 3: the scheme the client must use). */
const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="metrics"' };

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Liveness, readiness and who may read the metrics (API.md "Operations": /healthz, /readyz, /metrics). */
export class HealthService {
  /** SHA-256 of PARLEY_METRICS_TOKEN, or undefined when /metrics is open. */
  private readonly metricsTokenDigest: Buffer | undefined;

  /**
   * `metricsToken`: PARLEY_METRICS_TOKEN; when set, /metrics requires `Authorization: Bearer <token>`.
   * `isStarted`: false until start-up recovery and the first-start bootstrap are done (`starting`).
   */
  constructor(
    private readonly store: Store, private readonly isDraining: () => boolean, metricsToken?: string,
    private readonly isStarted: () => boolean = () => true,
  ) {
    this.metricsTokenDigest = metricsToken === undefined ? undefined : sha256(metricsToken);
  }

  /**
   * `ready` when start-up is done (recovery, and the first-start bootstrap with its credentials file),
   * the store answers and the server is not draining. Never throws.
   */
  async readiness(): Promise<Readiness> {
    if (this.isDraining()) return { status: 'draining' };
    if (!this.isStarted()) return { status: 'starting' };
    try {
      await this.store.ping();
    } catch {
      return { status: 'store_unreachable' };
    }
    return { status: 'ready', store: this.store.kind };
  }

  /**
   * Lets a request read /metrics: always when no metrics token is configured; otherwise only with
   * `authorization` = `Bearer <token>` (scheme case-insensitive, RFC 9110 section 11.1). The token is
   * compared in constant time: the SHA-256 digests of both (equal lengths, whatever was sent) with
   * crypto.timingSafeEqual. Throws AppError 401 `missing_credentials` (no Authorization header) or
   * `invalid_token` (another credential), with `WWW-Authenticate: Bearer`.
   */
  checkMetricsAccess(authorization: string | undefined): void {
    if (this.metricsTokenDigest === undefined) return;
    if (authorization === undefined || authorization === '') {
      throw new AppError('missing_credentials', 'The metrics need "Authorization: Bearer <PARLEY_METRICS_TOKEN>".', { headers: CHALLENGE });
    }
    // Another scheme, or no token after it, is compared as an empty token: never equal (the token has 16+ characters).
    const sent = sha256(/^bearer +(\S+) *$/i.exec(authorization)?.[1] ?? '');
    if (!timingSafeEqual(sent, this.metricsTokenDigest)) {
      throw new AppError('invalid_token', 'The metrics token is not valid.', { headers: CHALLENGE });
    }
  }
}
