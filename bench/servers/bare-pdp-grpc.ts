/**
 * The Node.js ceiling for the PDP's gRPC transport: a grpc-js server of the same proto
 * (proto/pdp.proto, loaded with the gateway's proto-loader options) whose Evaluate answers at
 * once, and whose EvaluateStream answers each request as it arrives, with no authentication,
 * policy or audit. Each answer is the gateway's own PolicyResponse to the same request (looked up
 * by its action, from BENCH_PDP_ANSWERS), so the messages are the same size. Runs as its own
 * process (child_process.fork) and reports its port over IPC.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import type { ChildMessage } from './messages';

const PROTO = path.resolve(__dirname, '..', '..', '..', 'proto', 'pdp.proto');
/** The gateway's options (src/gateway/pdp/pdp-grpc-options.ts): decoding and encoding cost the same. */
const LOADER_OPTIONS = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

type Answers = Record<string, object>;

function answerTo(answers: Answers, request: { action: string }): object {
  const answer = answers[request.action];
  if (answer === undefined) throw new Error(`no answer for action ${request.action}`);
  return answer;
}

function main(): void {
  const answers = JSON.parse(process.env.BENCH_PDP_ANSWERS ?? '{}') as Answers;
  const definition = protoLoader.loadSync(PROTO, LOADER_OPTIONS);
  const service = (grpc.loadPackageDefinition(definition) as unknown as { agentgov: { pdp: { v1: { PolicyDecisionPoint: grpc.ServiceClientConstructor } } } }).agentgov.pdp.v1
    .PolicyDecisionPoint.service;
  const server = new grpc.Server();
  server.addService(service, {
    Evaluate: (call: grpc.ServerUnaryCall<{ action: string }, object>, callback: grpc.sendUnaryData<object>) => callback(null, answerTo(answers, call.request)),
    EvaluateStream: (call: grpc.ServerDuplexStream<{ action: string }, object>) => {
      call.on('data', (request: { action: string }) => call.write(answerTo(answers, request)));
      call.on('end', () => call.end());
    },
    Subscribe: (call: grpc.ServerWritableStream<object, object>) => call.end(),
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
    if (error) throw error;
    process.send?.({ type: 'listening', port } satisfies ChildMessage);
  });
  process.on('disconnect', () => process.exit(0));
}

if (require.main === module) main();
