/**
 * Longest any call to Redis waits for its answer (ioredis `commandTimeout`, on every client the
 * gateway makes). A Redis that stops answering without closing the connection (a partition, a
 * frozen server) held each call, and the request behind it, for ever: a decision under a
 * `rate_limit` rule, a billing request, an agent revocation's publish, every alert's count.
 * Nothing here is imported: the alert worker thread reads it too.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1000;
