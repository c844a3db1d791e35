import { z } from 'zod'

/** Settings of the admin server (/metrics, /healthz, /readyz, /status). */
export const adminSettingsShape = {
  /** this machine only unless set (as the proxy's `host`); containers set 0.0.0.0 for probes and scrapes */
  adminHost: z.string().min(1).default('127.0.0.1'),
  adminPort: z.number().int().min(0).max(65535).default(9090),
}
