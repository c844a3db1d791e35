// Defined with the limiter, which refuses a rate's start past the deadline with it too (docs/redis-limiter.md,
// "Rates").
export { WaitTooLongError } from '../limiter/errors.js'
