import type { ProxyProcess } from '../support/process.js'

/** Polls /metrics (bounded: `attempts` × 200 ms) until the limiter mode is `mode`; whether it got there. */
export async function reachesMode(proxy: ProxyProcess, mode: string, attempts = 50): Promise<boolean> {
  // the examples name an admin token (the chart requires one in shared egress): /metrics asks for it
  const token = proxy.env.SLUICE_ADMIN_TOKEN
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
  for (let i = 0; i < attempts; i++) {
    const text = await (await fetch(`${proxy.adminUrl}/metrics`, { headers })).text()
    if (text.includes(`sluice_limiter_mode{mode="${mode}"} 1`)) return true
    await new Promise((r) => setTimeout(r, 200))
  }
  return false
}

/** A rendered container's env made runnable here: loopback, free ports, the rest as rendered. */
export const onLoopback = (
  rendered: NodeJS.ProcessEnv,
  extra: Record<string, string> = {},
): Record<string, string> => ({
  ...(rendered as Record<string, string>),
  SLUICE_HOST: '127.0.0.1',
  SLUICE_ADMIN_HOST: '127.0.0.1',
  SLUICE_PORT: '0',
  SLUICE_ADMIN_PORT: '0',
  ...extra,
})
