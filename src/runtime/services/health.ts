import type { Store } from '../../store/ports.js';

/** Readiness of this instance: `ready`, `draining` (SIGTERM received), or `store_unreachable`. */
export type Readiness = { status: 'ready'; store: string } | { status: 'draining' } | { status: 'store_unreachable' };

/** Liveness and readiness (API.md "Operations": /healthz, /readyz). */
export class HealthService {
  constructor(private readonly store: Store, private readonly isDraining: () => boolean) {}

  /** `ready` when the store answers and the server is not draining. Never throws. */
  async readiness(): Promise<Readiness> {
    if (this.isDraining()) return { status: 'draining' };
    try {
      await this.store.ping();
    } catch {
      return { status: 'store_unreachable' };
    }
    return { status: 'ready', store: this.store.kind };
  }
}
