import type { ServerInterceptor } from '@grpc/grpc-js';
import type { PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { GrpcOptions, Transport } from '@nestjs/microservices';
import path from 'node:path';
import { AppConfig } from '../../core/config/app-config';
import type { PdpAnswer } from '../../core/pdp/pdp.service';
import { PolicyMessages } from './policy-messages';

/** proto/pdp.proto, beside src/ in the repository and beside dist/src/ in the build. */
export const PDP_PROTO_PATH = path.join(__dirname, '..', '..', '..', 'proto', 'pdp.proto');

/**
 * The PDP's gRPC server: the Nest gRPC microservice transport on PDP_GRPC_PORT, in the gateway's
 * process (a hybrid app). Messages are bounded like JSON bodies (MAX_JSON_BYTES): grpc-js
 * refuses a larger one with RESOURCE_EXHAUSTED before any handler runs. PolicyRequest and
 * PolicyResponse go through protobufjs directly (policy-messages.ts). `interceptors` see every call
 * (the metrics and request logs of src/core/telemetry).
 */
export function pdpGrpcOptions(config: AppConfig, interceptors: ServerInterceptor[] = []): GrpcOptions {
  return {
    transport: Transport.GRPC,
    options: {
      package: 'agentgov.pdp.v1',
      protoPath: PDP_PROTO_PATH,
      url: `${config.http.host}:${config.grpc.port}`,
      loader: { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true },
      maxReceiveMessageLength: config.http.maxJsonBytes,
      gracefulShutdown: true,
      // Passed to grpc-js's Server with the channel options (Nest spreads them into its options).
      channelOptions: { interceptors } as NonNullable<GrpcOptions['options']['channelOptions']>,
      onLoadPackageDefinition: policyMessagesOnTheWire,
    },
  };
}

/**
 * Evaluate and EvaluateStream read and write their messages with PolicyMessages rather than
 * proto-loader's codec, whose protobufjs 7 takes a truncated message for a shorter one and whose
 * Structs would come as message objects to convert again. Subscribe keeps proto-loader's, but
 * like PolicyMessages it never throws: grpc-js answers a throwing decoder INTERNAL.
 */
function policyMessagesOnTheWire(definition: PackageDefinition): void {
  const service = definition['agentgov.pdp.v1.PolicyDecisionPoint'] as ServiceDefinition;
  const messages = new PolicyMessages(PDP_PROTO_PATH);
  for (const method of ['Evaluate', 'EvaluateStream']) {
    service[method].requestDeserialize = (bytes) => messages.decode(bytes);
    // Both methods answer PdpAnswers (PdpGrpcController); the definition only knows them as objects.
    service[method].responseSerialize = (answer: object) => messages.encode(answer as PdpAnswer);
  }
  service.Subscribe.requestDeserialize = withProblem(service.Subscribe.requestDeserialize, 'PolicySubscription');
}

/** A decoder that returns `{ problem }` for malformed bytes, for the handler to answer INVALID_ARGUMENT. */
function withProblem(decode: (bytes: Buffer) => object, message: string): (bytes: Buffer) => object {
  return (bytes) => {
    try {
      return decode(bytes);
    } catch (error) {
      return { problem: `malformed ${message}: ${error instanceof Error ? error.message : String(error)}` };
    }
  };
}
