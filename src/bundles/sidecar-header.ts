/** Headers a sidecar sends with its bundle fetch, so the fleet status knows it. */
export enum SidecarHeader {
  Id = 'X-Sidecar-Id',
  Mode = 'X-Sidecar-Mode',
  /** The highest audit sequence number the sidecar has used. */
  AuditSeq = 'X-Sidecar-Audit-Seq',
  BundleVersion = 'X-Bundle-Version',
}
