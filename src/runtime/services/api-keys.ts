import { generateApiKey, hashApiKey } from '../../auth/api-keys.js';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { Store } from '../../store/ports.js';
import type { ApiKeyRecord, Page, PageRequest } from '../../store/records.js';

/** Longest grace period of a rotated key, s (30 days). */
export const MAX_GRACE_PERIOD_S = 30 * 24 * 3600;

/** A key with its secret, which exists only in this value: only the hash is stored (API.md "Credentials"). */
export interface IssuedApiKey {
  key: ApiKeyRecord;
  secret: string;
}

/**
 * API keys of an organization (API.md "Auth endpoints": the dashboard's key management). Every method is
 * scoped by `orgId`; another organization's key is `not_found`.
 */
export class ApiKeyService {
  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {}

  /** The organization's keys, newest first, revoked ones included (never a secret: only `last4`). */
  list(orgId: string, page: PageRequest): Promise<Page<ApiKeyRecord>> {
    return this.store.apiKeys.list(orgId, page);
  }

  /** A new key named `name`; the secret is returned once. */
  async create(orgId: string, name: string): Promise<IssuedApiKey> {
    const { key, secret } = this.newKey(orgId, name);
    await this.store.apiKeys.create(key);
    return { key, secret };
  }

  /**
   * Replaces key `keyId` by a new key with the same name. The old secret keeps working for
   * `gracePeriodSeconds` (0 = it stops at once), then gets 401 `revoked_api_key`. Throws AppError
   * `not_found` when the organization has no usable key with this id (unknown, revoked or expired).
   */
  async rotate(orgId: string, keyId: string, gracePeriodSeconds: number): Promise<IssuedApiKey> {
    const old = await this.store.apiKeys.get(orgId, keyId);
    if (old === undefined) throw new AppError('not_found', 'No such API key.');
    const at = this.now();
    const { key, secret } = this.newKey(orgId, old.name);
    const graceEndsAt = gracePeriodSeconds > 0 ? new Date(at + gracePeriodSeconds * 1000).toISOString() : null;
    if (!(await this.store.apiKeys.rotate(orgId, keyId, key, graceEndsAt, new Date(at).toISOString()))) {
      throw new AppError('not_found', 'No such API key, or it is already revoked or expired.');
    }
    return { key, secret };
  }

  /** Revokes key `keyId` at once (401 `revoked_api_key` from the next request on). Throws AppError `not_found` (unknown or already revoked). */
  async revoke(orgId: string, keyId: string): Promise<void> {
    if (!(await this.store.apiKeys.revoke(orgId, keyId, new Date(this.now()).toISOString()))) {
      throw new AppError('not_found', 'No such API key, or it is already revoked.');
    }
  }

  private newKey(orgId: string, name: string): IssuedApiKey {
    const secret = generateApiKey();
    const key: ApiKeyRecord = {
      id: newId('key'), org_id: orgId, name, key_hash: hashApiKey(secret), last4: secret.slice(-4),
      created_at: new Date(this.now()).toISOString(), revoked_at: null, expires_at: null,
    };
    return { key, secret };
  }
}
