import { createHash } from 'node:crypto'

/** An app token as `apps.list` / `apps.file` take it: only its SHA-256 hash (README "Going live"). */
export const tokenHash = (token: string): string => 'sha256:' + createHash('sha256').update(token).digest('hex')
