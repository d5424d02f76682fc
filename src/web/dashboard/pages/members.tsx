import '../shared.js';
import { useState } from 'preact/hooks';
import { ROLES, type Member, type Organization, type Page, type Role, type User } from '../api.js';
import type { Session } from '../session.js';
import { ConfirmDialog, ErrorAlert, Field, formatDate, ListFooter, messageOf, Modal, pageQuery, PageTitle, StatusMessage, usePagedList } from '../ui.js';
import type { Invitation } from './invitations.js';
import { canManage, roleLabel } from './roles.js';

const memberId = (m: Member) => m.user_id;

/**
 * The organization's members. Every member sees the list and may leave; owners and admins invite people
 * by e-mail (they join by accepting the invitation), change roles and remove members. Only an owner
 * touches the owner role, so an admin sees owners read-only and cannot grant `owner`; the server has the
 * last word (403, 409 `last_owner`), and its message is shown as it is.
 */
export function MembersPage({ session, org, user }: { session: Session; org: Organization; user: User }) {
  const list = usePagedList<Member>((after) => session.request<Page<Member>>('GET', `/v1/members${pageQuery(after)}`), memberId, org.id);
  const [flash, setFlash] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [saving, setSaving] = useState<string | null>(null);
  const manager = canManage(org);
  /** Roles this person may hand out. */
  const grantable = ROLES.filter((r) => r !== 'owner' || org.role === 'owner');
  const mayChange = (m: Member) => manager && (m.role !== 'owner' || org.role === 'owner');

  /** After a change to their own membership, the person's rights here may differ: read them again. */
  async function afterChange(m: Member, message: string) {
    setFlash(message);
    if (m.user_id === user.id) await session.reloadOrganizations().catch(() => undefined);
    list.reload();
  }

  async function changeRole(m: Member, role: Role, select: HTMLSelectElement) {
    setFlash('');
    setError(null);
    setSaving(m.user_id);
    try {
      await session.request<Member>('PATCH', `/v1/members/${encodeURIComponent(m.user_id)}`, { role });
      await afterChange(m, `${m.email} is now ${roleLabel(role).toLowerCase()}.`);
    } catch (err) {
      select.value = m.role;
      setError(messageOf(err));
    } finally {
      setSaving(null);
    }
  }

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Members</PageTitle>
          <p class="muted">
            People who can sign in to {org.name}.
            {manager ? ' Owners and admins manage API keys and members; operators read and chat.' : ' Owners and admins manage members.'}
          </p>
        </div>
      </div>
      <StatusMessage message={flash} />
      <ErrorAlert message={error} />
      {manager && <AddMember session={session} roles={grantable} onInvited={(i) => { setError(null); setFlash(`${i.email} is invited as ${roleLabel(i.role).toLowerCase()}: they become a member when they accept.`); }} />}
      {list.items !== null && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Members of {org.name}</caption>
            <thead>
              <tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Member since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
            </thead>
            <tbody>
              {list.items.map((m) => (
                <tr key={m.user_id}>
                  <th scope="row" data-label="E-mail" class="cell-strong">
                    {m.email}
                    {m.user_id === user.id && <span class="badge badge-muted badge-inline">You</span>}
                  </th>
                  <td data-label="Role">
                    {mayChange(m)
                      ? (
                        <select class="select-sm" aria-label={`Role of ${m.email}`} value={m.role} disabled={saving === m.user_id}
                          onChange={(e) => { void changeRole(m, e.currentTarget.value as Role, e.currentTarget); }}>
                          {(m.role === 'owner' ? ROLES : grantable).map((r) => <option key={r} value={r}>{roleLabel(r)}</option>)}
                        </select>
                      )
                      : <span class="badge">{roleLabel(m.role)}</span>}
                  </td>
                  <td data-label="Member since">{formatDate(m.created_at)}</td>
                  <td class="cell-actions">
                    {(mayChange(m) || m.user_id === user.id) && (
                      <div class="actions">
                        <button type="button" class="btn btn-sm btn-danger-quiet" aria-label={m.user_id === user.id ? `Leave ${org.name}` : `Remove ${m.email}`}
                          onClick={() => { setFlash(''); setError(null); setRemoving(m); }}>{m.user_id === user.id ? 'Leave' : 'Remove'}</button>
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="members" />
      {removing !== null && (
        <RemoveDialog session={session} member={removing} self={removing.user_id === user.id} orgId={org.id} orgName={org.name}
          onDone={(removed) => { setRemoving(null); if (removed) void afterChange(removing, `${removing.email} was removed.`); }} />
      )}
    </>
  );
}

/** The form that invites a person by e-mail with a role. */
function AddMember({ session, roles, onInvited }: { session: Session; roles: readonly Role[]; onInvited: (i: Invitation) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('operator');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const invited = await session.request<Invitation>('POST', '/v1/members', { email: email.trim(), role });
      setEmail('');
      onInvited(invited);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card add-member" onSubmit={submit} aria-labelledby="add-member-title">
      <h2 id="add-member-title" class="card-title">Invite a member</h2>
      <p class="muted small">They see the invitation when they sign in, and become a member when they accept it (within 7 days). Someone without a Parley account yet can accept once it exists (<code>npm run parley -- users create</code>).</p>
      <ErrorAlert message={error} />
      <div class="form-row">
        <Field id="member-email" label="E-mail">
          <input id="member-email" type="email" required autocomplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field id="member-role" label="Role">
          <select id="member-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {roles.map((r) => <option key={r} value={r}>{roleLabel(r)}</option>)}
          </select>
        </Field>
        <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Inviting…' : 'Invite'}</button>
      </div>
    </form>
  );
}

/** Confirms and removes a member, or the person themself leaves (`onDone(true)` when done). */
function RemoveDialog({ session, member, self, orgId, orgName, onDone }: {
  session: Session; member: Member; self: boolean; orgId: string; orgName: string; onDone: (removed: boolean) => void;
}) {
  return (
    <ConfirmDialog title={self ? `Leave ${orgName}?` : `Remove ${member.email}?`} confirmLabel={self ? 'Leave' : 'Remove member'} busyLabel={self ? 'Leaving…' : 'Removing…'}
      action={() => (self
        ? session.request<void>('DELETE', `/v1/me/organizations/${encodeURIComponent(orgId)}`, undefined, { org: false })
        : session.request<void>('DELETE', `/v1/members/${encodeURIComponent(member.user_id)}`))} onDone={onDone}>
      <p>{self
        ? `You lose access to ${orgName} at once. An owner or admin can invite you again.`
        : `${member.email} loses access to ${orgName} at once, also in a browser where they are signed in. Their account stays.`}</p>
    </ConfirmDialog>
  );
}
