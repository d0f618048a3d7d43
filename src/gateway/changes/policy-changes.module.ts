import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PolicyChangeEvents } from './policy-change-events';
import { PolicyChangeLog } from './policy-change-log';
import { PolicyVersion } from './policy-version.entity';

/** The versioned change history and its announcements, for every module whose changes alter decisions. */
@Module({
  imports: [TypeOrmModule.forFeature([PolicyVersion])],
  providers: [PolicyChangeEvents, PolicyChangeLog],
  exports: [PolicyChangeEvents, PolicyChangeLog],
})
export class PolicyChangesModule {}
