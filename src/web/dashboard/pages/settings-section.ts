/** The organization's settings, one file of the build (see build-section.ts): API keys, members and webhooks. */
export { ApiKeysPage } from './api-keys.js';
export { MembersPage } from './members.js';
export { WebhooksPage } from './webhooks.js';
