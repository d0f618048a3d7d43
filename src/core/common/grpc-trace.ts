import type { Metadata } from '@grpc/grpc-js';
import { ServiceHeader } from './service-header';
import { resolveTraceId } from './trace-id';

/**
 * A gRPC call's trace id, for a message without its own: metadata `x-trace-id`, else a W3C
 * `traceparent` (what OpenTelemetry's gRPC instrumentation sends), else a new one each time.
 * The metadata is read once per call, not per streamed message.
 */
export function callTrace(metadata: Metadata): () => string {
  const given = metadataText(metadata, ServiceHeader.ClientTraceId);
  const parent = metadataText(metadata, ServiceHeader.TraceParent);
  return () => resolveTraceId(given, parent);
}

/** A metadata key's values joined with ", ", as node:http joins a header sent more than once. */
function metadataText(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key);
  return values.length === 0 ? undefined : values.map(String).join(', ');
}
