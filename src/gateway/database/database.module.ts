import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import { DatabaseConnection } from './database-connection';
import { runMigrations } from './migrator';
import { MIGRATIONS } from './migration-list';

@Module({
  providers: [{ provide: DatabaseConnection, inject: [AppConfig], useFactory: (config: AppConfig) => DatabaseConnection.open(config) }],
  exports: [DatabaseConnection],
})
class DatabaseConnectionModule {}

/** TypeORM on the `pg` driver, against PostgreSQL or the embedded PGlite; migrates at start. */
@Module({})
export class DatabaseModule {
  static forRoot(): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({
          imports: [DatabaseConnectionModule],
          inject: [DatabaseConnection],
          useFactory: (connection: DatabaseConnection) => ({ ...dataSourceOptions(connection), connection }),
          dataSourceFactory: async (options) => {
            const { connection, ...dataSourceOptions } = options as DataSourceOptions & { connection: DatabaseConnection };
            const dataSource = await new OwningDataSource(dataSourceOptions, connection).initialize();
            await runMigrations(dataSource);
            return dataSource;
          },
        }),
        DatabaseConnectionModule,
      ],
      exports: [DatabaseConnectionModule],
    };
  }
}

/** Closes the embedded database right after TypeORM has ended its pool, whatever the module order. */
class OwningDataSource extends DataSource {
  constructor(
    options: DataSourceOptions,
    private readonly connection: DatabaseConnection,
  ) {
    super(options);
  }

  override async destroy(): Promise<void> {
    await super.destroy();
    await this.connection.close();
  }
}

function dataSourceOptions(connection: DatabaseConnection) {
  return {
    type: 'postgres' as const,
    url: connection.url,
    autoLoadEntities: true,
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    retryAttempts: 2,
    retryDelay: 500,
    extra: { max: connection.poolMax, connectionTimeoutMillis: 10_000 },
    logging: false,
  };
}
