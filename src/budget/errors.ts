import { refusal } from '../errors/refusal.js'

/** New work past the memory budget (docs/deploy.md, "Memory: a budget"): refused before the container's limit is reached. */
export const MemoryBudgetError = refusal<[number]>(
  'SLUICE_MEMORY_BUDGET',
  'sluice holds its whole memory budget (%d bytes) in requests and answers now; try again after Retry-After',
  503,
  'memory_budget',
)

/** New work of a holder (an app; an organisation with app identity off) past its share of the memory budget: it is refused, the others keep theirs. */
export const MemoryShareError = refusal<[number]>(
  'SLUICE_MEMORY_BUDGET',
  "this app's share of the memory budget (%d bytes) is held in its requests and answers now; try again after Retry-After",
  503,
  'memory_budget',
  // an instance of MemoryBudgetError: every place that tells a budget refusal apart tells this one too
  MemoryBudgetError as unknown as ErrorConstructor,
)
