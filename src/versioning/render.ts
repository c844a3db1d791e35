import type { VersionsSnapshot, VersionState } from './types.js'

/** What the proxy does today with a request naming `v`, in words. */
function doing(v: VersionState, latest: string | undefined): string {
  switch (v.action) {
    case 'reject':
      return 'answers 410 here'
    case 'rewrite':
      return `rewrites it to ${v.upstream ?? '?'}`
    case 'pass':
      if (v.state === 'deprecated') {
        const days = v.daysUntilRetirement ?? 0
        return `forwards it, with Deprecation and Sunset headers (retires in ${days} day${days === 1 ? '' : 's'})`
      }
      if (v.state === 'unreleased') return 'forwards it (not released yet: the API decides)'
      if (v.state === 'unknown') return 'forwards it (not in the calendar: the API decides)'
      return v.version === latest ? 'forwards it (the latest)' : 'forwards it'
  }
}

const pad = (s: string, n: number): string => s.padEnd(n)

/** The calendar and today's handling of each version, as `npm run versions` prints it. */
export function renderSnapshot(s: VersionsSnapshot): string {
  const p = s.policy
  const policy = [
    `retired versions: ${p.retired === 'reject' ? 'reject (410)' : `rewrite to ${p.rewriteTo === 'map' ? 'versions.rewriteMap' : `the ${p.rewriteTo} supported version`}`}`,
    `no header: ${p.missing === 'pin' ? `pin ${p.pin ?? '?'}` : 'pass'}`,
    `endpoint newer than the version: ${p.gate}`,
  ].join(' · ')
  const rows: string[][] = [['version', 'released', 'retires', 'state', 'today sluice…']]
  for (const v of s.versions) {
    const retires = v.retiresOn
      ? `${v.retiresOn}${v.retirementSource === 'learned' ? ' (learned)' : v.retirementSource === 'settings' ? ' (settings)' : ''}`
      : '–'
    rows.push([v.version, v.released ?? '–', retires, v.state, doing(v, s.latest)])
  }
  const nh = s.noHeader
  rows.push([
    '(no header)',
    '',
    '',
    '',
    nh.action === 'reject'
      ? `answers 410 here (the pinned ${p.pin ?? '?'} is retired)`
      : nh.action === 'pin'
        ? `sends ${nh.upstream ?? '?'} (pinned)`
        : `forwards it without one (the API uses its latest${s.latest ? `, ${s.latest} by the calendar` : ''})`,
  ])
  if (s.apiV1)
    rows.push([
      'API v1',
      '',
      s.apiV1.retired,
      s.apiV1.isRetired ? 'retired' : 'deprecated',
      s.apiV1.isRetired ? 'answers /v1 requests 410' : 'retires on that day',
    ])
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  const table = rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : pad(c, widths[i]! + 2)))
      .join('')
      .trimEnd(),
  )

  const added = s.versions
    .filter((v) => v.added.length > 0)
    .map((v) => `  ${pad(v.version, 6)}${v.added.map((a) => (a.on ? `${a.what} (${a.on})` : a.what)).join('; ')}`)

  return [
    `API versions on ${s.today} (UTC), header ${s.header}, calendar ${s.calendar}`,
    policy,
    '',
    ...table,
    ...(added.length > 0 ? ['', 'What each version added:', ...added] : []),
    '',
  ].join('\n')
}
