import { useEffect } from 'preact/hooks';
import type { Organization, User } from '../api.js';
import { Logo } from '../logo.js';
import { navigate } from '../router.js';
import type { Session } from '../session.js';
import { InvitationList } from './invitations.js';
import { roleLabel } from './roles.js';

/**
 * The organization picker, for a person in several organizations (or none): one button per
 * organization; the choice is remembered for the next visit. Pending invitations come first, to accept
 * or decline (src/web/dashboard/pages/invitations.tsx).
 */
export function OrganizationsPage({ session, user, organizations, current, onSignOut, signingOut }: {
  session: Session; user: User; organizations: Organization[]; current: Organization | null;
  onSignOut: () => void; signingOut: boolean;
}) {
  useEffect(() => { document.title = 'Choose an organization · Parley'; }, []);

  function choose(org: Organization) {
    session.chooseOrganization(org.id);
    navigate('home', true);
  }

  return (
    <main class="auth">
      <div class="auth-card auth-card-wide">
        <Logo />
        <h1>Choose an organization</h1>
        <p class="muted auth-lead">Signed in as {user.email}.</p>
        <InvitationList session={session} />
        {organizations.length === 0
          ? <p class="notice">You are not a member of any organization yet. Ask an owner or admin of one to invite you.</p>
          : (
            <ul class="org-list" aria-label="Your organizations">
              {organizations.map((org) => (
                <li key={org.id}>
                  <button type="button" class="org-choice" onClick={() => choose(org)} aria-current={current?.id === org.id ? 'true' : undefined}>
                    <span class="org-choice-name">{org.name}</span>
                    <span class="badge">{roleLabel(org.role)}</span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        <div class="auth-foot">
          <button type="button" class="btn btn-quiet" onClick={onSignOut} disabled={signingOut}>{signingOut ? 'Signing out…' : 'Sign out'}</button>
        </div>
      </div>
    </main>
  );
}
