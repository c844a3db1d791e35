import { z } from 'zod'

/** Settings of the admin server (/metrics, /healthz, /readyz, /status). */
export const adminSettingsShape = {
  adminHost: z.string().min(1).default('0.0.0.0'),
  adminPort: z.number().int().min(0).max(65535).default(9090),
}
