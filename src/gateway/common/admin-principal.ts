/** Who is calling the admin API: an organization, through one of its admin tokens. */
export interface AdminPrincipal {
  orgId: string;
  /** Id (not the secret) of the admin token used; recorded as the actor of admin changes. */
  tokenId: string;
}
