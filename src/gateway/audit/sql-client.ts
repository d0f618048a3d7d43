/**
 * The little the audit batch store needs from a database connection, so the same code writes
 * through TypeORM in the gateway's thread and through a plain `pg` client in the audit worker.
 */
export interface SqlClient {
  /** Runs one statement; resolves to its rows. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Sends `data` to a `COPY ... FROM STDIN` statement; absent where the connection cannot (the embedded database). */
  copyFrom?(sql: string, data: string): Promise<void>;
  /** Runs `work` in a transaction on one connection. */
  transaction<T>(work: (client: SqlClient) => Promise<T>): Promise<T>;
}
