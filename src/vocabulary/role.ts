/**
 * Roles of a person in an organization (the "People sign in" issue): defined once, zod first.
 * - `owner`: everything an admin may do, and the only role that may grant or take away `owner`;
 *   an organization always keeps at least one owner (409 `last_owner`).
 * - `admin`: manages agents, knowledge bases, API keys and members (except owners).
 * - `operator`: reads agents, knowledge bases and conversations, and chats.
 */
import { z } from 'zod';

export const RoleSchema = z.enum(['owner', 'admin', 'operator']).meta({ id: 'Role' });
export type Role = z.infer<typeof RoleSchema>;

/** Every role, most powerful first. */
export const ROLES = RoleSchema.options;
