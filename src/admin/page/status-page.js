/*
 * The status page's script, run by the browser as it is (plain ES2020, no build step): served inline by
 * status-page.ts (with its hash in the page's Content-Security-Policy). Every value reaches the DOM as
 * text, never as markup: instance names come from clients. Its stable hooks for tests are listed in
 * docs/observability.md, "Status page".
 */
'use strict'
;(function () {
  var params = new URLSearchParams(location.search)
  var refreshMs = Math.max(250, Number(params.get('refresh')) || 2000)
  var LATE_MS = 10000
  var updates = 0
  var lastOk = 0
  var $ = function (sel) {
    return document.querySelector(sel)
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag)
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k])
    if (text !== undefined) e.textContent = String(text)
    return e
  }
  function setText(node, text) {
    text = String(text)
    if (node.textContent !== text) node.textContent = text
  }
  function setNum(node, value, text) {
    node.setAttribute('data-value', String(value))
    setText(node, text === undefined ? value : text)
  }
  function num(v) {
    return typeof v === 'number' && isFinite(v) ? v : 0
  }
  function duration(ms) {
    ms = num(ms)
    if (ms <= 0) return '0'
    if (ms < 1000) return Math.round(ms) + ' ms'
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s'
    return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s'
  }
  function uptime(s) {
    s = Math.max(0, Math.floor(num(s)))
    var d = Math.floor(s / 86400),
      h = Math.floor((s % 86400) / 3600),
      m = Math.floor((s % 3600) / 60)
    if (d) return d + 'd ' + h + 'h ' + m + 'm'
    if (h) return h + 'h ' + m + 'm'
    if (m) return m + 'm ' + (s % 60) + 's'
    return s + 's'
  }
  var MODE_CLASS = { memory: 'ok', redis: 'ok', local: 'warn', open: 'bad', closed: 'bad' }
  var STATE_CLASS = { supported: 'ok', deprecated: 'warn', retired: 'bad' }

  function renderHeader(s) {
    var mode = $('[data-field=mode]')
    setText(mode, s.mode || 'unknown')
    mode.className = 'badge ' + (MODE_CLASS[s.mode] || '')
    setText($('[data-field=backend]'), s.backend || '?')
    setNum($('[data-field=uptimeSeconds]'), num(s.uptimeSeconds), uptime(s.uptimeSeconds))
    var closing = $('[data-field=closing]')
    closing.hidden = !s.closing
  }

  // another upstream's organisation is shown with its upstream's name (docs/upstreams.md, "Keys")
  function orgOf(k) {
    return k.upstream ? k.upstream + ' ' + k.instance : k.instance
  }
  function keyId(k) {
    return orgOf(k) + '|' + k.endpoint
  }
  // keys grouped by upstream, the CRM's (no `upstream`) first, then by instance and endpoint
  function byUpstream(a, b) {
    var u = a.upstream || '',
      v = b.upstream || ''
    if (u !== v) return u < v ? -1 : 1
    var x = orgOf(a),
      y = orgOf(b)
    return x < y ? -1 : x > y ? 1 : a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0
  }

  // A key's rate from /status `rates` (docs/redis-limiter.md, "Rates"): N per window, where it came
  // from when /status says, and the next free start.
  function ratesById(rates) {
    var byId = new Map()
    if (Array.isArray(rates))
      rates.forEach(function (r) {
        byId.set(keyId(r), r)
      })
    return byId
  }
  function rateText(r) {
    var rate = r && (r.learned || r.rate)
    if (!rate) return '—'
    var text = num(rate.requests) + ' / ' + duration(rate.windowMs)
    if (r.source) text += ' ' + r.source
    else if (r.learned) text += ' learned'
    var next = num(r.nextStartMs)
    return text + (next > 0 ? ' · next in ' + duration(next) : ' · next now')
  }
  function renderRate(cell, r) {
    setText(cell, rateText(r))
    cell.setAttribute('data-next-start-ms', String(r ? num(r.nextStartMs) : 0))
  }

  // The limit and where it comes from: published by the API, configured, or learned (README "Learned limits")
  function renderLimit(cell, k, limit) {
    var learned = k.learned && typeof k.learned.value === 'number' ? k.learned : null
    // /status says where the limit comes from; without it (an older replica), a learned value is called learned
    var source = k.limitSource || (learned ? 'learned' : '')
    setNum(cell, limit, source ? limit + ' ' + source : undefined)
    cell.setAttribute('data-source', source)
    cell.classList.toggle('learned', source === 'learned')
    if (learned) {
      cell.setAttribute('data-learned', String(learned.value))
      cell.setAttribute(
        'title',
        'learned from the answers of the API: ' + learned.value.toFixed(2) + ', never above ' + learned.ceiling,
      )
    } else {
      cell.removeAttribute('data-learned')
      cell.removeAttribute('title')
    }
  }

  function renderKeys(keys, rates) {
    var body = $('#keys tbody')
    var filter = ($('#filter').value || '').trim().toLowerCase()
    var rateOf = ratesById(rates)
    var sorted = keys.slice().sort(byUpstream)
    var existing = new Map()
    body.querySelectorAll('tr[data-key]').forEach(function (tr) {
      existing.set(tr.getAttribute('data-key'), tr)
    })
    var seen = new Set()
    var prevInstance = null
    var prevUpstream = null
    var shown = 0
    // rows are moved only when out of place, so a steady table causes no DOM churn
    var next = body.firstElementChild
    sorted.forEach(function (k) {
      var id = keyId(k)
      seen.add(id)
      var tr = existing.get(id) || newKeyRow(k)
      var limit = num(k.limit),
        inFlight = num(k.inFlight),
        queued = num(k.queued),
        oldest = num(k.oldestWaitMs)
      setNum(tr.querySelector('[data-field=inFlight]'), inFlight)
      renderLimit(tr.querySelector('[data-field=limit]'), k, limit)
      renderRate(tr.querySelector('[data-field=rate]'), rateOf.get(id))
      setNum(tr.querySelector('[data-field=queued]'), queued)
      var o = tr.querySelector('[data-field=oldestWaitMs]')
      setNum(o, oldest, duration(oldest))
      o.classList.toggle('late-text', oldest >= LATE_MS)
      var bar = tr.querySelector('.bar')
      var pct = limit > 0 ? Math.min(100, (inFlight / limit) * 100) : 0
      bar.firstChild.style.width = pct + '%'
      bar.classList.toggle('full', inFlight >= limit && inFlight <= limit)
      bar.classList.toggle('over', inFlight > limit)
      bar.setAttribute('title', inFlight + ' of ' + limit + ' permits in use')
      renderApps(tr.querySelector('[data-field=apps]'), k.apps, inFlight, queued)
      tr.classList.toggle('waiting', queued > 0 && oldest < LATE_MS)
      tr.classList.toggle('late', oldest >= LATE_MS)
      var visible = !filter || id.toLowerCase().indexOf(filter) >= 0
      tr.hidden = !visible
      if (visible) {
        tr.classList.toggle('instance-first', orgOf(k) !== prevInstance)
        tr.classList.toggle('upstream-first', (k.upstream || '') !== prevUpstream && shown > 0)
        prevInstance = orgOf(k)
        prevUpstream = k.upstream || ''
        shown++
      }
      if (tr === next) next = next.nextElementSibling
      else body.insertBefore(tr, next)
    })
    existing.forEach(function (tr, id) {
      if (!seen.has(id)) tr.remove()
    })
    var empty = body.querySelector('tr.empty')
    if (shown === 0) {
      if (!empty) {
        empty = el('tr', { class: 'empty' })
        empty.appendChild(el('td', { colspan: '9' }))
      }
      setText(
        empty.firstChild,
        keys.length ? 'No key matches the filter.' : 'No active keys: nothing in flight and nothing queued.',
      )
      body.appendChild(empty)
    } else if (empty) empty.remove()
    setText($('[data-field=keyCount]'), keys.length)
    var totals = keys.reduce(
      function (t, k) {
        t.inFlight += num(k.inFlight)
        t.queued += num(k.queued)
        t.limit += num(k.limit)
        t.oldest = Math.max(t.oldest, num(k.oldestWaitMs))
        return t
      },
      { inFlight: 0, queued: 0, limit: 0, oldest: 0 },
    )
    setNum($('[data-field=totalInFlight]'), totals.inFlight)
    setNum($('[data-field=totalLimit]'), totals.limit)
    setNum($('[data-field=totalQueued]'), totals.queued)
    setNum($('[data-field=maxOldestWaitMs]'), totals.oldest, duration(totals.oldest))
  }

  function newKeyRow(k) {
    var tr = el('tr', { 'data-key': keyId(k), 'data-upstream': k.upstream || 'neon' })
    tr.appendChild(el('td', { class: 'instance', 'data-field': 'instance' }, orgOf(k)))
    tr.appendChild(el('td', { class: 'endpoint', 'data-field': 'endpoint' }, k.endpoint))
    var barCell = el('td', { class: 'bar-cell' })
    var bar = el('div', { class: 'bar', 'data-field': 'bar' })
    bar.appendChild(el('span'))
    barCell.appendChild(bar)
    tr.appendChild(barCell)
    ;['inFlight', 'limit', 'rate', 'queued', 'oldestWaitMs'].forEach(function (f) {
      tr.appendChild(el('td', { class: 'num', 'data-field': f }))
    })
    tr.appendChild(el('td', { class: 'apps', 'data-field': 'apps' }))
    return tr
  }

  // Each upstream (docs/upstreams.md): its route, whether sluice injects its keys, its active keys
  // and their load from `keys`, and the 429s it answered (/status `upstreams`).
  function renderUpstreams(upstreams, keys) {
    var section = $('#upstreams')
    var body = $('#upstreams tbody')
    var rows = Array.isArray(upstreams) ? upstreams : []
    section.hidden = rows.length === 0
    while (body.firstChild) body.firstChild.remove()
    rows.forEach(function (u) {
      var mine = keys.filter(function (k) {
        return (k.upstream || 'neon') === u.name
      })
      var sum = function (f) {
        return mine.reduce(function (n, k) {
          return n + num(k[f])
        }, 0)
      }
      var tr = el('tr', { 'data-upstream': String(u.name) })
      tr.appendChild(el('td', { 'data-field': 'name' }, u.name))
      tr.appendChild(el('td', { 'data-field': 'prefix' }, u.prefix))
      var creds = u.credentials === 'injected' ? 'key injected (' + u.header + ')' : "apps' own"
      tr.appendChild(el('td', { 'data-field': 'credentials' }, creds))
      ;[
        ['keys', mine.length],
        ['inFlight', sum('inFlight')],
        ['queued', sum('queued')],
        ['upstream429s', num(u.upstream429s)],
      ].forEach(function (f) {
        var td = el('td', { class: 'num', 'data-field': f[0] })
        setNum(td, f[1])
        tr.appendChild(td)
      })
      if (num(u.upstream429s) > 0) tr.querySelector('[data-field=upstream429s]').classList.add('late-text')
      body.appendChild(tr)
    })
  }

  // Each app's share of a key (README "Fair share between apps"): the permits it holds and the waiters
  // it has queued, of the key's whole. Apps holding most first; the busiest few, then a count of the rest.
  var MAX_APPS_SHOWN = 6
  function share(part, whole) {
    return whole > 0 ? Math.round((part / whole) * 100) + '%' : '0%'
  }
  function renderApps(cell, apps, inFlight, queued) {
    while (cell.firstChild) cell.firstChild.remove()
    if (!Array.isArray(apps)) return
    var sorted = apps.slice().sort(function (a, b) {
      return num(b.held) - num(a.held) || num(b.queued) - num(a.queued) || (String(a.app) < String(b.app) ? -1 : 1)
    })
    sorted.slice(0, MAX_APPS_SHOWN).forEach(function (a) {
      var held = num(a.held),
        waiting = num(a.queued)
      var chip = el('span', {
        class: 'app',
        'data-app': String(a.app),
        'data-held': String(held),
        'data-queued': String(waiting),
        title:
          a.app +
          ': ' +
          held +
          ' of ' +
          inFlight +
          ' permits held (' +
          share(held, inFlight) +
          '), ' +
          waiting +
          ' of ' +
          queued +
          ' waiters (' +
          share(waiting, queued) +
          ')',
      })
      chip.appendChild(el('b', null, a.app))
      chip.appendChild(el('span', null, ' ' + held + ' held · ' + waiting + ' waiting'))
      cell.appendChild(chip)
    })
    if (sorted.length > MAX_APPS_SHOWN)
      cell.appendChild(el('span', { class: 'app more' }, '+' + (sorted.length - MAX_APPS_SHOWN) + ' more'))
  }

  // Permits not spent per (instance, endpoint) since the start: /status's reuse.permitsSaved, most first.
  function renderSaved(reuse) {
    var section = $('#saved')
    var body = $('#saved tbody')
    var rows = reuse && Array.isArray(reuse.permitsSaved) ? reuse.permitsSaved : []
    section.hidden = rows.length === 0
    while (body.firstChild) body.firstChild.remove()
    var total = 0
    rows.forEach(function (k) {
      var coalesced = num(k.coalesced),
        hits = num(k.cacheHits)
      total += coalesced + hits
      var tr = el('tr', { 'data-saved-key': keyId(k) })
      tr.appendChild(el('td', { class: 'instance' }, orgOf(k)))
      tr.appendChild(el('td', { class: 'endpoint' }, k.endpoint))
      ;[
        ['coalesced', coalesced],
        ['cacheHits', hits],
        ['saved', coalesced + hits],
      ].forEach(function (f) {
        var td = el('td', { class: 'num', 'data-field': f[0] })
        setNum(td, f[1])
        tr.appendChild(td)
      })
      body.appendChild(tr)
    })
    setText($('#saved .count'), rows.length ? '(' + rows.length + ')' : '')
    setNum($('[data-field=totalSaved]'), total)
  }

  // Each app's use of what all apps share (docs/deploy.md, "Memory: a budget"; docs/apps.md, "Shares of the queue"):
  // /status memory.holders, each key's apps[].queued summed over the keys, reuse.coalescing.apps.
  function renderShares(memory, keys, reuse) {
    var held = (memory && memory.holders) || {}
    var following = (reuse && reuse.coalescing && reuse.coalescing.apps) || {}
    var queued = Object.create(null)
    keys.forEach(function (k) {
      ;(Array.isArray(k.apps) ? k.apps : []).forEach(function (a) {
        if (num(a.queued) > 0) queued[a.app] = num(queued[a.app]) + num(a.queued)
      })
    })
    var seen = Object.create(null)
    var names = Object.keys(held)
      .concat(Object.keys(queued), Object.keys(following))
      .filter(function (n) {
        if (seen[n]) return false
        seen[n] = true
        return true
      })
      .sort()
    var body = $('#shares tbody')
    $('#shares').hidden = names.length === 0
    while (body.firstChild) body.firstChild.remove()
    names.forEach(function (name) {
      var tr = el('tr', { 'data-share': name })
      tr.appendChild(el('td', {}, name))
      ;[
        ['memory', num(held[name])],
        ['queued', num(queued[name])],
        ['followers', num(following[name])],
      ].forEach(function (f) {
        var td = el('td', { class: 'num', 'data-field': f[0] })
        setNum(td, f[1])
        tr.appendChild(td)
      })
      body.appendChild(tr)
    })
    setText($('#shares .count'), names.length ? '(' + names.length + ')' : '')
  }

  function daysUntil(day) {
    var t = Date.parse(day + 'T00:00:00Z')
    if (!isFinite(t)) return null
    var today = new Date()
    var utcToday = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate())
    return Math.round((t - utcToday) / 86400000)
  }
  function versionKey(v) {
    var m = /^(\d+)\.(\d+)$/.exec(v)
    return m ? Number(m[1]) * 10000 + Number(m[2]) : -1
  }

  function renderVersions(versions) {
    var section = $('#versions')
    var body = $('#versions tbody')
    if (!Array.isArray(versions)) {
      section.hidden = true
      return
    }
    section.hidden = false
    while (body.firstChild) body.firstChild.remove()
    var sorted = versions.slice().sort(function (a, b) {
      return versionKey(String(b.version)) - versionKey(String(a.version))
    })
    sorted.forEach(function (v) {
      var tr = el('tr', { 'data-version': String(v.version) })
      tr.appendChild(el('td', { 'data-field': 'version' }, v.version))
      var st = el('td')
      st.appendChild(
        el('span', { class: 'badge ' + (STATE_CLASS[v.state] || ''), 'data-field': 'state' }, v.state || '?'),
      )
      tr.appendChild(st)
      // a retirement learned from upstream 410s says what it rests on and when it lapses
      var learned =
        v.learned && typeof v.learned === 'object'
          ? ' (learned: ' +
            num(v.learned.answers) +
            ' × 410 from ' +
            num(v.learned.instances) +
            ' orgs, lapses ' +
            String(v.learned.expires).slice(0, 16).replace('T', ' ') +
            ' UTC)'
          : ''
      tr.appendChild(el('td', { 'data-field': 'retiresOn' }, v.retiresOn ? v.retiresOn + learned : '—'))
      var days = v.retiresOn ? daysUntil(v.retiresOn) : null
      var d = el(
        'td',
        { class: 'num', 'data-field': 'daysLeft' },
        days === null ? '—' : days < 0 ? 'retired ' + -days + ' d ago' : days + ' d',
      )
      if (days !== null) d.setAttribute('data-value', String(days))
      if (days !== null && days < 30) d.classList.add('late-text')
      tr.appendChild(d)
      var r = el('td', { class: 'num', 'data-field': 'requests' })
      setNum(r, num(v.requests))
      tr.appendChild(r)
      if (num(v.requests) === 0) tr.classList.add('idle') // in the calendar, not used since the start
      body.appendChild(tr)
    })
    if (!sorted.length) {
      var empty = el('tr', { class: 'empty' })
      empty.appendChild(el('td', { colspan: '5' }, 'No version seen yet.'))
      body.appendChild(empty)
    }
    setText($('#versions .count'), sorted.length ? '(' + sorted.length + ')' : '')
  }

  function renderDetails(details) {
    var dl = $('#details dl')
    while (dl.firstChild) dl.firstChild.remove()
    var entries = details && typeof details === 'object' ? Object.keys(details) : []
    $('#details').hidden = entries.length === 0
    entries.forEach(function (k) {
      var v = details[k]
      dl.appendChild(el('dt', null, k))
      dl.appendChild(el('dd', { 'data-detail': k }, typeof v === 'string' ? v : JSON.stringify(v)))
    })
  }

  function connection(ok, message) {
    var c = $('[data-field=connection]')
    c.className = 'badge ' + (ok ? 'ok' : 'bad')
    setText(c, ok ? 'live' : 'stale')
    c.setAttribute('title', message || '')
    var err = $('[data-field=error]')
    setText(err, ok ? '' : message)
  }

  function render(s) {
    renderHeader(s)
    var keys = Array.isArray(s.keys) ? s.keys : []
    renderUpstreams(s.upstreams, keys)
    renderKeys(keys, s.rates)
    renderSaved(s.reuse)
    renderShares(s.memory, keys, s.reuse)
    renderVersions(s.versions)
    renderDetails(s.details)
    setText($('[data-field=updatedAt]'), new Date().toLocaleTimeString())
    updates++
    document.body.setAttribute('data-updates', String(updates))
  }

  var last = null
  function poll() {
    // a tab nobody looks at does not poll; it catches up as soon as it is shown again
    if (document.hidden) {
      setTimeout(poll, refreshMs)
      return
    }
    var ctl = new AbortController()
    var timeout = setTimeout(
      function () {
        ctl.abort()
      },
      Math.max(refreshMs * 2, 5000),
    )
    fetch('./status', { cache: 'no-store', headers: { accept: 'application/json' }, signal: ctl.signal })
      .then(function (res) {
        if (!res.ok) throw new Error('/status answered ' + res.status)
        return res.json()
      })
      .then(function (s) {
        last = s
        lastOk = Date.now()
        connection(true)
        render(s)
      })
      .catch(function (e) {
        connection(
          false,
          'cannot reach /status: ' +
            (e && e.message ? e.message : e) +
            (lastOk ? ' (showing data from ' + new Date(lastOk).toLocaleTimeString() + ')' : ''),
        )
      })
      .finally(function () {
        clearTimeout(timeout)
        setTimeout(poll, refreshMs)
      })
  }

  $('#filter').addEventListener('input', function () {
    if (last) renderKeys(Array.isArray(last.keys) ? last.keys : [], last.rates)
  })
  setText($('[data-field=refresh]'), refreshMs / 1000 + ' s')
  poll()
})()
