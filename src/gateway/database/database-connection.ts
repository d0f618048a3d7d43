import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../core/config/app-config';
import { EmbeddedPostgres } from './embedded-postgres';

/**
 * Where the database is: DATABASE_URL, or the embedded PGlite started here. The embedded
 * database is closed by the data source itself after its pool has ended (see DatabaseModule).
 */
@Injectable()
export class DatabaseConnection {
  private constructor(
    readonly url: string,
    readonly poolMax: number,
    readonly embedded: boolean,
    private readonly server?: EmbeddedPostgres,
  ) {}

  /** Connects to DATABASE_URL, or starts the embedded database in DATA_DIR. */
  static async open(config: AppConfig): Promise<DatabaseConnection> {
    if (config.database.url) return new DatabaseConnection(config.database.url, config.database.poolMax, false);
    const server = await EmbeddedPostgres.start(config.database.dataDir);
    // PGlite is a single session: a second pooled connection would interleave transactions.
    return new DatabaseConnection(server.url, 1, true, server);
  }

  /** Stops the embedded database, if this process started one. */
  async close(): Promise<void> {
    await this.server?.stop();
  }
}
