import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createServer } from 'node:net';
import path from 'node:path';

/** A free loopback port, for a gateway's gRPC listener. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const definition = protoLoader.loadSync(path.join(__dirname, '..', '..', 'proto', 'pdp.proto'), {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
});
const pdpPackage = (grpc.loadPackageDefinition(definition) as unknown as { agentgov: { pdp: { v1: { PolicyDecisionPoint: grpc.ServiceClientConstructor } } } }).agentgov.pdp.v1;

/** A generated-stub client of the PDP, as an SDK would use it. */
export type PdpClient = grpc.Client & {
  Evaluate(request: object, metadata: grpc.Metadata, callback: (error: grpc.ServiceError | null, response: Record<string, unknown>) => void): void;
  EvaluateStream(metadata: grpc.Metadata): grpc.ClientDuplexStream<object, Record<string, unknown>>;
  Subscribe(request: object, metadata: grpc.Metadata): grpc.ClientReadableStream<Record<string, unknown>>;
};

export function pdpClient(port: number): PdpClient {
  return new pdpPackage.PolicyDecisionPoint(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as PdpClient;
}

export function apiKeyMetadata(key: string | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (key !== undefined) metadata.set('x-api-key', key);
  return metadata;
}

/** Evaluate as a promise. */
export function evaluate(client: PdpClient, key: string | undefined, request: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => client.Evaluate(request, apiKeyMetadata(key), (error, response) => (error ? reject(error) : resolve(response))));
}

/** A Struct message of a plain object (what generated stubs build from a map). */
export function struct(object: Record<string, unknown>): object {
  const value = (v: unknown): object => {
    if (v === null) return { nullValue: 'NULL_VALUE' };
    if (typeof v === 'number') return { numberValue: v };
    if (typeof v === 'string') return { stringValue: v };
    if (typeof v === 'boolean') return { boolValue: v };
    if (Array.isArray(v)) return { listValue: { values: v.map(value) } };
    return { structValue: struct(v as Record<string, unknown>) };
  };
  return { fields: Object.fromEntries(Object.entries(object).map(([k, v]) => [k, value(v)])) };
}
