/** Headers a sidecar sends with its bundle fetch, so the fleet status knows it. */
export enum SidecarHeader {
  Id = 'X-Sidecar-Id',
  Mode = 'X-Sidecar-Mode',
  BundleVersion = 'X-Bundle-Version',
}
