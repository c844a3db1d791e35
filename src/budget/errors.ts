import createError from '@fastify/error'

/** New work past the memory budget (docs/deploy.md, "Memory: a budget"): refused before the container's limit is reached. */
export const MemoryBudgetError = createError<[number]>(
  'SLUICE_MEMORY_BUDGET',
  'sluice holds its whole memory budget (%d bytes) in requests and answers now; try again after Retry-After',
  503,
)
