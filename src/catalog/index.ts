import { fileURLToPath } from 'node:url'

export { compileCatalog, loadCatalog } from './catalog.js'
export { readCatalogFile } from './file.js'
export { normalisePath, queryProblem, rawTargetProblem } from './path.js'
export { isIdLike, unknownTemplate } from './unknown.js'
export { endpointNamer, UNKNOWN_ENDPOINT } from './names.js'
export * from './errors.js'
export type * from './types.js'

/** `config/endpoints.yaml` of this package (the same two levels up from src/catalog and dist/catalog). */
export const DEFAULT_CATALOG_FILE = fileURLToPath(new URL('../../config/endpoints.yaml', import.meta.url))
