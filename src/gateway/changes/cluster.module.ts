import { Global, Module } from '@nestjs/common';
import { ClusterEvents } from './cluster-events';

/** Cross-instance events (agent revocations, policy changes, plan changes). */
@Global()
@Module({ providers: [ClusterEvents], exports: [ClusterEvents] })
export class ClusterModule {}
