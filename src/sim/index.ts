export { startSim, type Sim } from './server.js'
export { DEFAULT_SIM_OPTIONS, resolveSimOptions, type SimOptions } from './options.js'
export { isRetiredAsPublished, PUBLISHED_RETIREMENTS } from './retired.js'
export { statsKey, type ArrivalOutcome, type SimArrival, type SimKeyStats, type SimStats } from './stats.js'
