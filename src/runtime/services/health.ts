import type { Store } from '../../store/ports.js';

/**
 * Readiness of this instance: `ready`, `starting` (start-up recovery or the first-start bootstrap is not
 * done yet), `draining` (SIGTERM received), or `store_unreachable`.
 */
export type Readiness = { status: 'ready'; store: string } | { status: 'starting' } | { status: 'draining' } | { status: 'store_unreachable' };

/** Liveness and readiness (API.md "Operations": /healthz, /readyz). */
export class HealthService {
  constructor(private readonly store: Store, private readonly isDraining: () => boolean, private readonly isStarted: () => boolean = () => true) {}

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
}
