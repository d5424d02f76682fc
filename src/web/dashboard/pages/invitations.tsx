import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Role } from '../api.js';
import { linkTo, pathOf } from '../router.js';
import type { Session } from '../session.js';
import { ErrorAlert, formatDate, messageOf, StatusMessage } from '../ui.js';
import { roleLabel } from './roles.js';

/**
 * Invitations to organizations (API.md "Auth endpoints"): a person joins an organization only by
 * accepting one. `GET /v1/me` lists the pending invitations of the signed-in person's e-mail; the
 * organization picker shows them with Accept and Decline, and the header of every page says when some
 * wait.
 */

/** An invitation, as `POST /v1/members` answers it. */
export interface Invitation {
  id: string;
  email: string;
  role: Role;
  status: 'pending' | 'accepted' | 'declined' | 'replaced';
  created_at: string;
  expires_at: string;
}

/** A pending invitation of the signed-in person (`GET /v1/me`), with its organization. */
export interface PendingInvitation extends Invitation {
  organization: { id: string; name: string };
}

/** The signed-in person's pending invitations (null while loading), and a function that reads them again. */
export function usePendingInvitations(session: Session): { invitations: PendingInvitation[] | null; reload: () => void } {
  const [invitations, setInvitations] = useState<PendingInvitation[] | null>(null);
  const reload = useCallback(() => {
    session.request<{ invitations?: PendingInvitation[] }>('GET', '/v1/me', undefined, { org: false })
      .then((me) => setInvitations(me.invitations ?? []), () => setInvitations([]));
  }, [session]);
  useEffect(reload, [reload]);
  return { invitations, reload };
}

/**
 * The pending invitations, each with Accept and Decline. Accepting makes the person a member: their
 * organizations are read again (the picker then lists the new one).
 */
export function InvitationList({ session }: { session: Session }) {
  const { invitations, reload } = usePendingInvitations(session);
  const [busy, setBusy] = useState<string | null>(null);
  const [flash, setFlash] = useState('');
  const [error, setError] = useState<string | null>(null);

  async function answer(invitation: PendingInvitation, verb: 'accept' | 'decline') {
    setBusy(invitation.id);
    setFlash('');
    setError(null);
    try {
      await session.request('POST', `/v1/me/invitations/${encodeURIComponent(invitation.id)}/${verb}`, undefined, { org: false });
      setFlash(verb === 'accept' ? `You joined ${invitation.organization.name}.` : `You declined the invitation to ${invitation.organization.name}.`);
      if (verb === 'accept') await session.reloadOrganizations().catch(() => undefined);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(null);
      reload();
    }
  }

  if (invitations === null) return null;
  return (
    <section class="invitations" aria-labelledby="invitations-title">
      <StatusMessage message={flash} />
      <ErrorAlert message={error} />
      {invitations.length > 0 && (
        <>
          <h2 id="invitations-title" class="card-title">Invitations</h2>
          <ul class="org-list" aria-label="Invitations to organizations">
            {invitations.map((inv) => (
              <li key={inv.id} class="invitation">
                <div>
                  <span class="org-choice-name">{inv.organization.name}</span>{' '}
                  <span class="badge">{roleLabel(inv.role)}</span>
                  <p class="muted small">Until {formatDate(inv.expires_at)}</p>
                </div>
                <div class="actions">
                  <button type="button" class="btn btn-sm btn-primary" disabled={busy !== null} aria-label={`Accept the invitation to ${inv.organization.name}`}
                    onClick={() => { void answer(inv, 'accept'); }}>Accept</button>
                  <button type="button" class="btn btn-sm" disabled={busy !== null} aria-label={`Decline the invitation to ${inv.organization.name}`}
                    onClick={() => { void answer(inv, 'decline'); }}>Decline</button>
                </div>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** In the header: a link to the organization picker when invitations wait; nothing otherwise. */
export function InvitationsNotice({ session }: { session: Session }) {
  const { invitations } = usePendingInvitations(session);
  const n = invitations?.length ?? 0;
  if (n === 0) return null;
  return (
    <a href={pathOf('organizations')} class="link-quiet" onClick={linkTo('organizations')}>
      {n === 1 ? '1 invitation' : `${n} invitations`}
    </a>
  );
}
