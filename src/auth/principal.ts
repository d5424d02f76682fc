/** Who is calling: resolved from a credential by src/auth (API.md "Credentials"). */
export interface Principal {
  kind: 'api_key';
  /** The organization every resource access is scoped to. */
  orgId: string;
  /** The credential's id (`key_...`), for logs. */
  credentialId: string;
}
