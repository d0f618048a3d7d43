import { Global, Injectable, Module } from '@nestjs/common';

/**
 * Whether this process has begun to shut down (GracefulShutdown marks it at SIGTERM or SIGINT):
 * from then on `/health/ready` answers 503, so whatever still routes to it stops doing so.
 */
@Injectable()
export class ShutdownState {
  private begun = false;

  get shuttingDown(): boolean {
    return this.begun;
  }

  begin(): void {
    this.begun = true;
  }
}

/** Provides the one ShutdownState of an app (the gateway and the sidecar import it). */
@Global()
@Module({ providers: [ShutdownState], exports: [ShutdownState] })
export class ShutdownStateModule {}
