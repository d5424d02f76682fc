import type { Organization, Role } from '../api.js';

const LABELS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', operator: 'Operator' };

/** "Owner", "Admin", "Operator". */
export function roleLabel(role: Role): string {
  return LABELS[role];
}

/** Whether the person's role in `org` lets them manage API keys and members (owners and admins). */
export function canManage(org: Organization): boolean {
  return org.role === 'owner' || org.role === 'admin';
}
