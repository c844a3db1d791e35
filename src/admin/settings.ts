import { z } from 'zod'

const LABEL = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
const DNS_NAME = new RegExp(`^${LABEL}(\\.${LABEL})*\\.?$`)

/** Settings of the admin server (/metrics, /healthz, /readyz, /status). */
export const adminSettingsShape = {
  /** this machine only unless set (as the proxy's `host`); containers set 0.0.0.0 for probes and scrapes */
  adminHost: z.string().min(1).default('127.0.0.1'),
  adminPort: z.number().int().min(0).max(65535).default(9090),
  /** a bearer token `/status`, the status page and `/metrics` require (`Authorization: Bearer <token>`); unset → open */
  adminToken: z.string().min(16, 'at least 16 characters').optional(),
  /**
   * a second port answering only `/healthz` and `/readyz`, for a kubelet that cannot reach a
   * loopback-bound admin port (the chart's sidecar; docs/deploy.md, "Sidecar"); unset → none
   */
  healthPort: z.number().int().min(0).max(65535).optional(),
  /** its interface: every one by default, since the kubelet probes the pod's IP and the two paths tell nothing secret */
  healthHost: z.string().min(1).default('0.0.0.0'),
  /** also require `adminToken` on `/healthz` and `/readyz` (off: probes carry no token) */
  adminTokenHealth: z.boolean().default(false),
  /**
   * without `adminToken`, the DNS names (Host) the admin port answers under besides IP addresses,
   * localhost and `adminHost` (host.ts: a defence against DNS rebinding); e.g. an Ingress's name
   */
  adminHostNames: z
    .array(z.string().max(253).regex(DNS_NAME, 'a DNS name such as sluice-admin.example.org (no port, no wildcard)'))
    .max(100)
    .default([]),
}
