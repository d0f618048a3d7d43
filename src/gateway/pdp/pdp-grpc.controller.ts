import { Controller } from '@nestjs/common';
import { GrpcMethod, GrpcStreamCall } from '@nestjs/microservices';
import { Metadata, ServerDuplexStream, ServerWritableStream } from '@grpc/grpc-js';
import { once } from 'node:events';
import { Observable } from 'rxjs';
import { AdapterAuthenticator, grpcAdapterCredentials } from '../access/adapter-authenticator';
import type { AdapterPrincipal } from '../access/api-keys.service';
import { AppError } from '../../core/common/app-error';
import { AdapterAuth } from '../../core/common/auth-decorators';
import { errorBody, GrpcErrorStatus, grpcErrorOf } from '../../core/common/error-body';
import { ErrorCode } from '../../core/common/error-code';
import { grpcPrincipal } from '../auth/grpc-principal';
import { callTrace } from '../../core/common/grpc-trace';
import { RequestFailures } from '../../core/decision/request-failures';
import { checked, PdpRequest, traced } from '../../core/pdp/pdp-request';
import { PdpAnswer, PdpService } from '../../core/pdp/pdp.service';
import { PolicyChangeFeed, PolicyChangeView } from './policy-change-feed';
import type { DecodedPolicyRequest } from './policy-messages';

interface GrpcSubscription {
  orgId: string;
  sinceVersion: number;
  /** Set instead of the fields when the bytes are not a PolicySubscription (pdp-grpc-options.ts). */
  problem?: string;
}

/** Requests read ahead of the one being decided before the stream stops reading (flow control). */
const STREAM_READ_AHEAD = 64;

/**
 * The PDP's gRPC transport (`agentgov.pdp.v1.PolicyDecisionPoint`): it only translates messages
 * to PdpRequests and answers back; PdpService decides. Authentication is the global guard's
 * (`x-api-key` or `authorization` metadata).
 */
@Controller()
@AdapterAuth()
export class PdpGrpcController {
  constructor(
    private readonly pdp: PdpService,
    private readonly feed: PolicyChangeFeed,
    private readonly adapters: AdapterAuthenticator,
    private readonly failures: RequestFailures,
  ) {}

  @GrpcMethod('PolicyDecisionPoint', 'Evaluate')
  evaluate(request: DecodedPolicyRequest, metadata: Metadata): Promise<PdpAnswer> {
    return this.pdp.evaluate(grpcPrincipal(metadata).orgId, fromGrpc(request, callTrace(metadata)), 'pdp');
  }

  /**
   * One answer per request, in order, decided one at a time. Reading pauses while more than
   * STREAM_READ_AHEAD requests wait, and deciding waits while the client does not take its
   * answers (`drain`), so neither side can flood the other. An error (an unknown agent, a
   * tripped rate limit, a credential revoked since the stream opened) ends the stream with its
   * status, as gRPC streams do.
   */
  @GrpcStreamCall('PolicyDecisionPoint', 'EvaluateStream')
  evaluateStream(call: ServerDuplexStream<DecodedPolicyRequest, PdpAnswer>): void {
    const recheck = this.recheckOf(call.metadata);
    const trace = callTrace(call.metadata);
    const waiting: DecodedPolicyRequest[] = [];
    let deciding = false;
    let ended = false;
    let failed = false;
    const pump = async (): Promise<void> => {
      if (deciding || failed) return;
      deciding = true;
      try {
        while (waiting.length > 0 && !failed) {
          const { orgId } = await (await recheck)();
          const answer = await this.pdp.evaluate(orgId, fromGrpc(waiting.shift()!, trace), 'pdp');
          if (call.cancelled) return;
          if (!call.write(answer)) await once(call, 'drain');
          if (waiting.length <= STREAM_READ_AHEAD / 2 && call.isPaused()) call.resume();
        }
        if (ended && !failed) call.end();
      } catch (error) {
        failed = true;
        this.failures.answered({ traceId: trace(), method: '', path: call.getPath() }, errorBody(error));
        call.emit('error', grpcError(error));
      } finally {
        deciding = false;
      }
    };
    call.on('data', (request: DecodedPolicyRequest) => {
      waiting.push(request);
      if (waiting.length >= STREAM_READ_AHEAD) call.pause();
      void pump();
    });
    call.on('end', () => {
      ended = true;
      void pump();
    });
  }

  /**
   * The feed sends only while the call takes messages (Nest would buffer the rest without bound),
   * and ends the call UNAUTHENTICATED at the first change after its credential is revoked (the
   * revocation is itself a change of the organization).
   */
  @GrpcMethod('PolicyDecisionPoint', 'Subscribe')
  subscribe(request: GrpcSubscription, metadata: Metadata, call: ServerWritableStream<GrpcSubscription, PolicyChangeView>): Observable<PolicyChangeView> {
    const { orgId } = grpcPrincipal(metadata);
    if (request.problem !== undefined) throw AppError.invalid(request.problem);
    if (request.orgId !== '' && request.orgId !== orgId) throw new AppError(ErrorCode.Forbidden, 'org_id must be the caller’s own organization');
    if (!Number.isSafeInteger(request.sinceVersion) || request.sinceVersion < 0) throw AppError.invalid('since_version must be a non-negative integer');
    const recheck = this.recheckOf(metadata);
    return this.feed.changesOf(orgId, request.sinceVersion, {
      ready: () => !call.writableNeedDrain,
      drained: () => drainedOrGone(call),
      allowed: async () => {
        await (await recheck)();
      },
    });
  }

  /**
   * The check a stream makes of its credential before each message (AdapterAuthenticator.recheckOf),
   * so a revocation holds mid-stream; its failure surfaces at the first message, as the call's status.
   */
  private recheckOf(metadata: Metadata): Promise<() => Promise<AdapterPrincipal>> {
    const recheck = this.adapters.recheckOf(grpcAdapterCredentials(metadata));
    // Awaited with the first message; a stream that ends before any must not leave a rejection unhandled.
    recheck.catch(() => undefined);
    return recheck;
  }
}

/** Resolves when the call can take messages again, or will never need to (cancelled, closed). */
function drainedOrGone(call: ServerWritableStream<GrpcSubscription, PolicyChangeView>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      for (const event of ['drain', 'cancelled', 'close']) call.off(event, done);
      resolve();
    };
    for (const event of ['drain', 'cancelled', 'close']) call.once(event, done);
  });
}

/**
 * The decoded message is already a PdpRequest (policy-messages.ts): only its problem and
 * the transport-wide checks remain. Without a trace_id of its own it takes the call's trace, as
 * HTTP takes its headers'.
 */
function fromGrpc(request: DecodedPolicyRequest, trace: () => string): PdpRequest {
  if (request.problem !== undefined) throw AppError.invalid(request.problem);
  const question = checked(request);
  return question.traceId === '' ? traced(question, trace()) : question;
}

function grpcError(error: unknown): Omit<GrpcErrorStatus, 'unexpected'> {
  const { unexpected: _unexpected, ...status } = grpcErrorOf(error);
  return status;
}
