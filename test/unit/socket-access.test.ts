/**
 * closeForAccess (src/transport/ws/sessions.ts): the close a change of what a socket was opened with
 * asks for (API.md "Auth endpoints", "WebSockets" close codes).
 */
import { describe, expect, it } from 'vitest';
import { closeForAccess } from '../../src/transport/ws/sessions.js';

describe('closeForAccess', () => {
  it('an ended credential closes with 4401 and its error code; an unpublished key with 4404', () => {
    expect(closeForAccess({ kind: 'ended', reason: 'session_ended' }, 'admin')).toEqual({ code: 4401, reason: 'session_ended' });
    expect(closeForAccess({ kind: 'ended', reason: 'invalid_token' }, undefined)).toEqual({ code: 4401, reason: 'invalid_token' });
    expect(closeForAccess({ kind: 'ended', reason: 'revoked_api_key' }, undefined)).toEqual({ code: 4401, reason: 'revoked_api_key' });
    expect(closeForAccess({ kind: 'ended', reason: 'unpublished' }, undefined)).toEqual({ code: 4404, reason: 'unpublished' });
  });

  it('a person no longer a member: 4403 not_a_member; another role: 4401 role_changed; the same role: stays open', () => {
    expect(closeForAccess({ kind: 'role', role: null }, 'owner')).toEqual({ code: 4403, reason: 'not_a_member' });
    expect(closeForAccess({ kind: 'role', role: 'operator' }, 'admin')).toEqual({ code: 4401, reason: 'role_changed' });
    expect(closeForAccess({ kind: 'role', role: 'admin' }, 'admin')).toBeUndefined();
  });
});
