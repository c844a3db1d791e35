import { describe, expect, it } from 'vitest'
import type { Tree } from './chart.js'
import { APP_DEPLOYMENT, podOf } from './pod.js'
import { canRender, only, render, renderOk } from './render.js'

/**
 * The sidecar in someone else's pod: Secret files it can read whatever that pod's fsGroup, an admin
 * port on the pod's IP only with a token, and the native sidecar only where Kubernetes has it
 * (docs/deploy.md, "Sidecar, end to end").
 */

const SECRETS = {
  apps: { enabled: true, existingSecret: 'sluice-apps' },
  credentials: { inject: true, orgKeys: [{ org: '1001', secretName: 'org-1001' }] },
}

interface Volume {
  name: string
  secret?: { defaultMode: number }
  projected?: { defaultMode: number }
}
const secretModes = (volumes: Volume[]): Record<string, number | undefined> =>
  Object.fromEntries(
    volumes.filter((v) => v.secret ?? v.projected).map((v) => [v.name, (v.secret ?? v.projected)!.defaultMode]),
  )

const appPodSpec = (values: Tree, kubeVersion?: string) => {
  const r = render(
    { mode: 'sidecar', ...values },
    { parent: APP_DEPLOYMENT, ...(kubeVersion === undefined ? {} : { kubeVersion }) },
  )
  return r
}

describe.skipIf(!canRender)("the sidecar in an app's pod", () => {
  it("mounts its Secret files 0444 in the app's pod (no fsGroup of ours there), 0440 with the chart's own fsGroup", () => {
    const r = appPodSpec(SECRETS)
    if (!r.ok) throw new Error(r.error)
    const app = r.manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'app')!
    const { spec } = podOf(app)
    expect(secretModes(spec.volumes as Volume[])).toEqual({ 'sluice-apps': 0o444, 'sluice-keys': 0o444 })

    const own = podOf(only(renderOk(SECRETS).manifests, 'Deployment'))
    expect(secretModes(own.spec.volumes as Volume[])).toEqual({ 'sluice-apps': 0o440, 'sluice-keys': 0o440 })
    expect((own.spec as unknown as { securityContext: { fsGroup: number } }).securityContext.fsGroup).toBe(1000)
    // without the fsGroup the 0440 files would be unreadable: the chart refuses, saying why
    const noGroup = render({ ...SECRETS, podSecurityContext: { fsGroup: null } })
    expect(!noGroup.ok && noGroup.error).toContain('set podSecurityContext.fsGroup')
  })

  it("refuses an admin port on the pod's IP without the admin token, and says how to fix it", () => {
    for (const values of [
      { podMonitor: { enabled: true, selector: { app: 'app' } } },
      { sidecar: { exposeAdmin: true } },
    ]) {
      const open = appPodSpec(values)
      expect(!open.ok && open.error).toContain("the sidecar's admin port listens on the pod's IP")
      expect(!open.ok && open.error).toContain('adminToken.existingSecret')
      expect(appPodSpec({ ...values, adminToken: { existingSecret: 'sluice-admin' } }).ok).toBe(true)
    }
    expect(appPodSpec({}).ok).toBe(true) // on loopback: nothing to guard
  })

  it('refuses the native sidecar on Kubernetes before 1.29; native: false and shared egress render there', () => {
    const old = appPodSpec({}, 'v1.28.9')
    expect(!old.ok && old.error).toContain('sidecar.native needs Kubernetes >= 1.29')
    expect(!old.ok && old.error).toContain('v1.28.9')
    expect(appPodSpec({ sidecar: { native: false } }, 'v1.28.9').ok).toBe(true)
    expect(appPodSpec({}, 'v1.29.0').ok).toBe(true)
    expect(render({}, { kubeVersion: 'v1.23.17' }).ok).toBe(true)
  })

  it('refuses two sidecar ports that are the same', () => {
    const same = appPodSpec({ sidecar: { ports: { proxy: 18080, admin: 19090, health: 19090 } } })
    expect(!same.ok && same.error).toContain('sidecar.ports.proxy, admin and health must differ (18080, 19090, 19090)')
  })
})
