/*
 * What a sidecar and the gateway agree on, beside the bundle format (bundle-format.ts): the
 * headers of a bundle fetch and the form of a sidecar's id.
 */

/** A sidecar's id, as the gateway's ingest and fleet status take it. */
export const SIDECAR_ID_FORMAT = /^[A-Za-z0-9._:-]{1,128}$/;
export const SIDECAR_ID_RULE = '1-128 letters, digits, or . _ : -';

/** Headers a sidecar sends with its bundle fetch, so the fleet status knows it. */
export enum SidecarHeader {
  Id = 'X-Sidecar-Id',
  Mode = 'X-Sidecar-Mode',
  /** The highest audit sequence number the sidecar has used. */
  AuditSeq = 'X-Sidecar-Audit-Seq',
  BundleVersion = 'X-Bundle-Version',
}
