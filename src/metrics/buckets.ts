/** Histogram buckets, in seconds. Each fits what it measures; docs/observability.md explains them. */

/** a wait for a permit: mostly zero, up to the 60 s default deadline (and a little past, for longer settings) */
export const QUEUE_WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90]

/** the upstream's own time: 50 ms to 5 s is the normal range; 10 and 30 catch the slow tail */
/** a socket is there at once (a new connection: a TCP and TLS handshake) or the pool is too small */
export const SOCKET_WAIT_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.25, 1, 5]
export const UPSTREAM_BUCKETS = [0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.4, 0.6, 1, 1.5, 2.5, 5, 10, 30]

/** what the client saw end to end: queue wait plus upstream time plus retries */
export const REQUEST_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 90]

/** one Redis command or script on a healthy network: well under a millisecond to tens of ms */
export const REDIS_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5]
