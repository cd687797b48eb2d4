// k1s dashboard: one ES module, no framework. Talks only to the Kubernetes API (through
// `k1s dashboard`'s proxy with a session cookie + anti-CSRF header, or directly at /ui/ with the
// user's bearer token), so RBAC decides what each user sees. Lists are server-side Tables kept
// live by watch; every view has a URL (#/...).

const $ = (sel, el = document) => el.querySelector(sel);
const main = $('#main');

// ---- auth --------------------------------------------------------------------------------

const auth = { mode: null, csrf: null, token: null, user: null };

async function login() {
  const m = location.hash.match(/login=([0-9a-f]+)/);
  if (m) {
    // The one-time link: exchange its token for the session cookie, then forget the link.
    history.replaceState(null, '', location.pathname + '#/');
    const r = await fetch('/ui/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: m[1] }) });
    const body = await r.json().catch(() => ({}));
    if (r.ok) { auth.mode = 'proxy'; auth.csrf = body.csrf; sessionStorage.setItem('k1s-csrf', body.csrf); return true; }
    showLogin('proxy', body.message || `login failed (${r.status})`);
    return false;
  }
  const s = await fetch('/ui/session').catch(() => null);
  if (s && s.headers.get('content-type')?.startsWith('application/json')) {
    const body = await s.json().catch(() => ({}));
    if (body.mode === 'proxy') {
      auth.mode = 'proxy';
      if (s.ok) { auth.csrf = body.csrf; return true; }
      showLogin('proxy', 'Not logged in: open the one-time link `k1s dashboard` printed (restart it for a new one).');
      return false;
    }
  }
  auth.mode = 'token';
  auth.token = sessionStorage.getItem('k1s-token');
  if (auth.token) return true;
  showLogin('token');
  return false;
}

function showLogin(mode, message) {
  fill(main);
  const box = h('section', { class: 'login' }, h('h1', {}, 'k1s dashboard'));
  if (message) box.append(h('p', { class: 'error' }, message));
  if (mode === 'token') {
    const ta = h('textarea', { id: 'token', rows: 4, placeholder: 'Paste a bearer token (kubectl create token NAME)' });
    const go = h('button', { id: 'token-login', class: 'primary' }, 'Log in');
    go.onclick = () => {
      const t = ta.value.trim();
      if (!t) return;
      sessionStorage.setItem('k1s-token', t);
      location.hash = '#/';
      location.reload();
    };
    box.append(h('p', {}, 'Every call carries this token: you see what RBAC lets its user see. It is kept in this tab only.'), ta, go);
  }
  main.append(box);
}

function headers(extra = {}) {
  const hd = { ...extra };
  if (auth.mode === 'proxy') hd['X-K1s-Csrf'] = auth.csrf;
  else if (auth.token) hd['Authorization'] = 'Bearer ' + auth.token;
  return hd;
}

// ---- API ---------------------------------------------------------------------------------

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
const META = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';

class ApiError extends Error {
  constructor(code, status) {
    super(status?.message || `HTTP ${code}`);
    this.code = code; this.reason = status?.reason || '';
  }
}

async function api(path, { method = 'GET', accept = 'application/json', body, type, signal } = {}) {
  const hd = headers({ Accept: accept });
  if (type) hd['Content-Type'] = type;
  const r = await fetch(path, { method, headers: hd, body, signal });
  if (!r.ok) {
    const text = await r.text();
    let st; try { st = JSON.parse(text); } catch { st = { message: text.trim() || r.statusText }; }
    if (r.status === 401 && auth.mode === 'token') sessionStorage.removeItem('k1s-token');
    throw new ApiError(r.status, st);
  }
  return r;
}
const getJSON = async (path, opts) => (await api(path, opts)).json();

// Newline-delimited JSON from a streaming response (watch events).
async function* lines(resp) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i); buf = buf.slice(i + 1);
      if (line.trim()) yield JSON.parse(line);
    }
  }
}

// ---- discovery ---------------------------------------------------------------------------

const kinds = new Map(); // plural (and short names, kind lowercased) -> resource
const COMMON = ['pods', 'deployments', 'replicasets', 'statefulsets', 'daemonsets', 'jobs', 'cronjobs',
  'services', 'configmaps', 'secrets', 'nodes', 'namespaces', 'events', 'customresourcedefinitions'];

async function discover() {
  const add = (gv, list) => {
    const [group, version] = gv.includes('/') ? gv.split('/') : ['', gv];
    for (const r of list.resources || []) {
      if (r.name.includes('/') || !r.verbs?.includes('list')) continue;
      const res = { group, version, plural: r.name, kind: r.kind, namespaced: r.namespaced, verbs: r.verbs, short: r.shortNames || [] };
      // The core group wins a name clash (events, as kubectl does).
      if (kinds.has(r.name) && kinds.get(r.name).plural === r.name && group !== '') continue;
      for (const n of [r.name, r.kind.toLowerCase(), r.singularName, ...res.short]) if (n && !kinds.has(n)) kinds.set(n, res);
      kinds.set(r.name, res);
    }
  };
  const [core, groups] = await Promise.all([getJSON('/api/v1'), getJSON('/apis')]);
  add('v1', core);
  await Promise.all(groups.groups.map(async g => {
    const gv = g.preferredVersion?.groupVersion || g.versions[0].groupVersion;
    try { add(gv, await getJSON('/apis/' + gv)); } catch { /* a group this user cannot read */ }
  }));
}

const resources = () => [...new Set(kinds.values())];

function basePath(res, ns) {
  const root = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  return res.namespaced && ns ? `${root}/namespaces/${encodeURIComponent(ns)}/${res.plural}` : `${root}/${res.plural}`;
}
const objectPath = (res, ns, name) => `${basePath(res, ns)}/${encodeURIComponent(name)}`;
const objectHash = (res, ns, name) => `#/o/${res.plural}/${ns || '_'}/${encodeURIComponent(name)}`;

// ---- DOM helpers -------------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el[k] = v; else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c != null) el.append(c instanceof Node ? c : String(c));
  return el;
}

// replaceChildren without the nulls conditional children leave (the DOM would print "null").
const fill = (el, ...kids) => el.replaceChildren(...kids.flat(Infinity).filter(k => k != null && k !== false));

function errorBox(e) {
  const code = e.code ? `${e.code} ${e.reason || ''}: ` : '';
  return h('p', { class: 'error', 'data-code': e.code || '' }, code + e.message);
}

let toastTimer;
function toast(msg) {
  const t = $('#toast'); t.textContent = msg; t.hidden = false;
  clearTimeout(toastTimer); toastTimer = setTimeout(() => { t.hidden = true; }, 3000);
}

function age(ts) {
  if (!ts) return '';
  const s = Math.max(0, (Date.now() - Date.parse(ts)) / 1000);
  if (s < 120) return `${Math.floor(s)}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// ---- YAML (emit only: edits are sent as YAML and parsed by the API server) ---------------

const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./-]*( [A-Za-z0-9_./()-]+)*$/;
const RESERVED = /^(true|false|yes|no|on|off|null|y|n|~)$/i;
function scalar(v) {
  if (v === null) return ['n', 'null'];
  if (typeof v === 'boolean') return ['b', String(v)];
  if (typeof v === 'number') return ['d', String(v)];
  if (PLAIN.test(v) && !RESERVED.test(v)) return ['s', v];
  return ['s', JSON.stringify(v)];
}
const keyText = k => (PLAIN.test(k) && !RESERVED.test(k) ? k : JSON.stringify(k));

// Lines of [class, text] tokens.
function yamlLines(v, indent = '', out = []) {
  const isObj = x => x && typeof x === 'object';
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isObj(item) && (Array.isArray(item) ? item.length : Object.keys(item).length)) {
        const sub = yamlLines(item, indent + '  ', []);
        sub[0] = [['', indent + '- '], ...sub[0].map(([c, t], i) => [c, i === 0 ? t.slice(indent.length + 2) : t])];
        out.push(...sub);
      } else if (blockable(item)) block(out, [['', indent + '-']], item, indent);
      else out.push([['', indent + '- '], inline(item)]);
    }
  } else {
    for (const [k, val] of Object.entries(v)) {
      const key = [['k', indent + keyText(k)], ['', ':']];
      if (isObj(val) && (Array.isArray(val) ? val.length : Object.keys(val).length)) {
        out.push(key);
        yamlLines(val, Array.isArray(val) ? indent : indent + '  ', out);
      } else if (blockable(val)) block(out, key, val, indent);
      else out.push([...key, ['', ' '], inline(val)]);
    }
  }
  return out;
}
// Multi-line strings as literal blocks (readable ConfigMap data), when they round-trip exactly.
const blockable = s => typeof s === 'string' && s.includes('\n') && !/[\r\t]/.test(s) && !/^\n*[ ]/.test(s)
  && !/\n\n$/.test(s) && !/^[ ]+$/m.test(s);
function block(out, head, s, indent) {
  const body = s.endsWith('\n') ? s.slice(0, -1) : s;
  out.push([...head, ['', ' '], ['s', s.endsWith('\n') ? '|' : '|-']]);
  for (const l of body.split('\n')) out.push([['s', l ? indent + '  ' + l : '']]);
}
const inline = v => (v && typeof v === 'object' ? ['', Array.isArray(v) ? '[]' : '{}'] : scalar(v));
const toYAML = v => yamlLines(v).map(l => l.map(t => t[1]).join('')).join('\n') + '\n';

function yamlNode(v) {
  const pre = h('pre', { id: 'yaml', class: 'yaml' });
  for (const line of yamlLines(v)) {
    for (const [c, t] of line) pre.append(c ? h('span', { class: 'y' + c }, t) : t);
    pre.append('\n');
  }
  return pre;
}

// ---- pages -------------------------------------------------------------------------------

let page = null; // { abort: AbortController, keys?: (e) => bool }
const ns = () => $('#ns').value;

function leave() {
  page?.abort.abort();
  page = { abort: new AbortController() };
  return page;
}

// A watch from a list's resourceVersion; calls back per event and relists when it expires.
async function watchLoop(path, accept, signal, relist, onEvent) {
  let rv = await relist();
  while (!signal.aborted) {
    try {
      const sep = path.includes('?') ? '&' : '?';
      const r = await api(`${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, { accept, signal });
      for await (const ev of lines(r)) {
        if (ev.type === 'ERROR') { throw new ApiError(ev.object.code, ev.object); }
        const o = ev.object;
        const meta = o.kind === 'Table' ? o.rows?.[0]?.object?.metadata : o.metadata;
        if (o.kind === 'Table' && o.metadata?.resourceVersion && !meta) rv = o.metadata.resourceVersion;
        if (meta?.resourceVersion) rv = meta.resourceVersion;
        if (ev.type !== 'BOOKMARK') onEvent(ev.type, o);
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e.code === 410) { rv = await relist(); continue; }
      if (e.code === 401 || e.code === 403) throw e;
      await new Promise(r => setTimeout(r, 1000));
      try { rv = await relist(); } catch (e2) { if (e2.code === 401 || e2.code === 403) throw e2; }
    }
  }
}

async function overview(p) {
  const body = h('div', { class: 'overview' });
  const chart = h('section', { id: 'api-chart' });
  fill(main, h('h1', {}, 'Overview'), chart, body);
  liveChart(p, chart);
  const render = async () => {
    const [nodes, pods, health, counts, leases] = await Promise.all([
      getJSON('/api/v1/nodes', { signal: p.abort.signal }).catch(e => e),
      getJSON('/api/v1/pods', { signal: p.abort.signal, accept: 'application/json' }).catch(e => e),
      api('/readyz?verbose', { accept: 'text/plain', signal: p.abort.signal }).then(r => r.text()).catch(e => e),
      Promise.all(COMMON.map(async n => {
        const res = kinds.get(n);
        if (!res) return [n, null];
        try {
          const l = await getJSON(basePath(res, ns()) + '?limit=500', { accept: META, signal: p.abort.signal });
          return [n, l.items.length + (l.metadata?.remainingItemCount || 0)];
        } catch (e) { return [n, e]; }
      })),
      getJSON('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', { signal: p.abort.signal }).catch(e => e),
    ]);
    const leaders = leases instanceof Error ? errorBox(leases) : h('table', { class: 'grid', id: 'leaders' },
      h('tr', {}, ['Component', 'Leader', 'Renewed'].map(t => h('th', {}, t))),
      leases.items.filter(l => !l.metadata.name.startsWith('apiserver-') && !l.metadata.name.startsWith('k1s-node'))
        .map(l => h('tr', {}, h('td', {}, l.metadata.name), h('td', {}, l.spec?.holderIdentity || '(none)'), h('td', {}, age(l.spec?.renewTime) + ' ago'))));
    const perNode = {};
    if (!(pods instanceof Error)) for (const pod of pods.items) perNode[pod.spec.nodeName || ''] = (perNode[pod.spec.nodeName || ''] || 0) + 1;
    const nodeRows = nodes instanceof Error ? [h('tr', {}, h('td', { colspan: 6 }, errorBox(nodes)))] : nodes.items.map(n => {
      const ready = (n.status?.conditions || []).find(c => c.type === 'Ready');
      const cap = n.status?.capacity || {};
      return h('tr', { 'data-name': n.metadata.name },
        h('td', {}, h('a', { href: objectHash(kinds.get('nodes'), '', n.metadata.name) }, n.metadata.name)),
        h('td', { class: ready?.status === 'True' ? 'ok' : 'bad' }, ready?.status === 'True' ? 'Ready' : 'NotReady'),
        h('td', {}, cap.cpu || ''), h('td', {}, cap.memory || ''),
        h('td', {}, `${perNode[n.metadata.name] || 0} / ${cap.pods || '?'}`), h('td', {}, age(n.metadata.creationTimestamp)));
    });
    fill(body, 
      h('section', {}, h('h2', {}, 'Nodes'), h('table', { class: 'grid' },
        h('thead', {}, h('tr', {}, ['Name', 'Status', 'CPU', 'Memory', 'Pods', 'Age'].map(t => h('th', {}, t)))), h('tbody', {}, nodeRows))),
      h('section', {}, h('h2', {}, 'Objects', ns() ? ` in ${ns()}` : ''), h('div', { class: 'counts' }, counts.map(([n, c]) =>
        h('a', { class: 'count', href: `#/r/${n}` }, h('b', {}, c instanceof Error ? '–' : c ?? '–'), h('span', {}, n))))),
      h('section', {}, h('h2', {}, 'Control plane health'), health instanceof Error ? errorBox(health)
        : h('pre', { id: 'health', class: health.includes('[-]') ? 'bad' : '' }, health)),
      h('section', {}, h('h2', {}, 'Leaders'), leaders),
    );
  };
  await render();
  const timer = setInterval(() => render().catch(() => {}), 5000);
  p.abort.signal.addEventListener('abort', () => clearInterval(timer));
}

// ---- live API chart (from /metrics) -----------------------------------------------------

// Sums of the counters the chart needs from one Prometheus text exposition: all requests, the
// latency histogram's cumulative buckets without long-running requests (watches, logs, exec:
// upstream's p99 SLO leaves them out too), the store's revision and size where exposed.
function scrape(text) {
  const m = { total: 0, buckets: new Map(), revision: null, size: null };
  const val = line => Number(line.slice(line.lastIndexOf(' ') + 1));
  for (const line of text.split('\n')) {
    if (line.startsWith('apiserver_request_total{')) m.total += val(line);
    else if (line.startsWith('apiserver_request_duration_seconds_bucket{')) {
      if (/verb="(WATCH|WATCHLIST|CONNECT)"|subresource="(log|exec|attach|portforward|proxy)"/.test(line)) continue;
      const le = line.match(/le="([^"]+)"/)?.[1];
      if (le) m.buckets.set(le, (m.buckets.get(le) || 0) + val(line));
    } else if (line.startsWith('k1s_storage_revision ')) m.revision = val(line);
    else if (line.startsWith('apiserver_storage_size_bytes')) m.size = (m.size || 0) + val(line);
  }
  return m;
}

// The 99th percentile of the requests between two scrapes, interpolated inside its bucket
// as Prometheus' histogram_quantile does; null when there were none.
function p99(prev, cur) {
  const les = [...cur.buckets.keys()].sort((a, b) => Number(a) - Number(b));
  const count = le => (cur.buckets.get(le) || 0) - (prev.buckets.get(le) || 0);
  const total = count('+Inf');
  if (!(total > 0)) return null;
  const rank = 0.99 * total;
  let lower = 0, below = 0;
  for (const le of les) {
    const n = count(le);
    if (n >= rank) return le === '+Inf' ? lower : lower + (Number(le) - lower) * (n > below ? (rank - below) / (n - below) : 1);
    if (le !== '+Inf') lower = Number(le);
    below = n;
  }
  return lower;
}

function sparkline(values) {
  const w = 220, ht = 36, max = Math.max(...values, 1e-9);
  const step = values.length > 1 ? w / (values.length - 1) : 0;
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(ht - 2 - (v / max) * (ht - 4)).toFixed(1)}`).join(' ');
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${ht}`); svg.setAttribute('class', 'spark');
  svg.innerHTML = `<polyline points="${pts}" />`;
  return svg;
}

const bytes = n => (n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : `${Math.round(n / 1024)} KiB`);

// Requests/s and p99 latency sampled from /metrics every 2 s while the overview is open.
function liveChart(p, box) {
  const rates = [], p99s = [];
  let prev = null, prevAt = 0;
  const sample = async () => {
    let m;
    try {
      m = scrape(await (await api('/metrics', { accept: 'text/plain', signal: p.abort.signal })).text());
    } catch (e) {
      if (p.abort.signal.aborted) return;
      clearInterval(timer);
      fill(box, h('h2', {}, 'API server'), h('p', { id: 'chart-note', class: 'muted' },
        `No live chart: it reads /metrics, which ${e.code === 403 ? 'your user may not read' : 'did not answer'} (${e.code || ''} ${e.message}).`));
      return;
    }
    const now = performance.now();
    if (prev) {
      rates.push(Math.max(0, (m.total - prev.total) / ((now - prevAt) / 1000)));
      p99s.push(p99(prev, m) ?? 0);
      if (rates.length > 60) { rates.shift(); p99s.shift(); }
    }
    prev = m; prevAt = now;
    const stat = (id, label, text, values) => h('div', { class: 'stat' }, h('span', { class: 'muted' }, label),
      h('b', { id }, text), values.length > 1 ? sparkline(values) : null);
    const last = a => a[a.length - 1];
    fill(box, h('h2', {}, 'API server'), h('div', { class: 'stats' },
      stat('rate', 'requests/s', rates.length ? `${last(rates).toFixed(1)} req/s` : 'measuring…', rates),
      stat('p99', 'p99 latency', p99s.length ? `${(last(p99s) * 1000).toFixed(1)} ms` : 'measuring…', p99s),
      m.revision != null ? stat('store-revision', 'store revision', String(m.revision), []) : null,
      m.size != null ? stat('store-size', 'store size', bytes(m.size), []) : null));
  };
  const timer = setInterval(sample, 2000);
  p.abort.signal.addEventListener('abort', () => clearInterval(timer));
  sample();
}

async function listPage(p, plural, params) {
  const res = kinds.get(plural);
  if (!res) { fill(main, errorBox(new Error(`no kind ${plural} on this server`))); return; }
  const filter = h('input', { id: 'filter', placeholder: 'filter by name (/)', value: params.get('q') || '' });
  const labels = h('input', { id: 'labels', placeholder: 'label selector, e.g. app=web', value: params.get('l') || '' });
  const delSel = h('button', { id: 'delete-selected', disabled: true }, 'Delete selected');
  const info = h('span', { class: 'muted' });
  const err = h('div');
  const table = h('table', { class: 'grid list', id: 'list' });
  fill(main, h('div', { class: 'bar' }, h('h1', {}, res.kind + 's'), filter, labels, delSel, info), err, table);
  let columns = [];
  const rows = new Map(); // uid -> { cells, meta }
  const checked = new Set();
  let sel = 0;
  let scheduled = false;
  // Rows stay in the DOM between renders: a watch event rewrites only the cells that changed,
  // so a table of thousands keeps up with a busy cluster.
  const thead = h('thead'), tbody = h('tbody');
  const trs = new Map(); // namespace/name -> { tr, box, tds, texts }
  let headKey = null;
  const collate = new Intl.Collator().compare;
  const tone = text => /^(Running|Ready|True|Active|Bound|Complete|Succeeded)$/.test(text) ? 'ok'
    : /(Error|Fail|BackOff|NotReady|Pending|Terminating)/.test(text) ? 'warn' : '';
  const cellText = v => v == null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const newRow = (key, namespace, name, n) => {
    const box = h('input', { type: 'checkbox' });
    box.onclick = e => { e.stopPropagation(); box.checked ? checked.add(key) : checked.delete(key); delSel.disabled = !checked.size; };
    const tds = Array.from({ length: n }, () => h('td'));
    const tr = h('tr', { 'data-name': name, 'data-namespace': namespace }, h('td', {}, box), tds);
    tr.onclick = () => { location.hash = objectHash(res, namespace, name); };
    return { tr, box, tds, texts: tds.map(() => null) };
  };
  const render = () => {
    scheduled = false;
    if (!thead.isConnected) fill(table, thead, tbody);
    const q = filter.value.trim().toLowerCase();
    const cols = columns.map((c, i) => [c, i]).filter(([c]) => !c.priority);
    const showNs = res.namespaced && !ns();
    const key = JSON.stringify([showNs, cols.map(([c]) => c.name)]);
    if (key !== headKey) {
      headKey = key;
      fill(thead, h('tr', {}, h('th', {}), showNs ? h('th', {}, 'Namespace') : null, cols.map(([c]) => h('th', { title: c.description || '' }, c.name))));
      for (const row of trs.values()) row.tr.remove();
      trs.clear();
    }
    const list = [...rows.values()].filter(r => !q || r.meta.name.toLowerCase().includes(q))
      .sort((a, b) => collate(a.meta.namespace || '', b.meta.namespace || '') || collate(a.meta.name, b.meta.name));
    sel = Math.min(sel, Math.max(0, list.length - 1));
    info.textContent = `${list.length} shown`;
    const keyOf = r => (r.meta.namespace || '') + '/' + r.meta.name;
    const shown = new Set(list.map(keyOf));
    for (const [k, row] of trs) if (!shown.has(k)) { row.tr.remove(); trs.delete(k); }
    let next = tbody.firstChild;
    list.forEach((r, i) => {
      const namespace = r.meta.namespace || '', k = keyOf(r);
      const texts = (showNs ? [namespace] : []).concat(cols.map(([, ci]) => cellText(r.cells[ci])));
      let row = trs.get(k);
      if (!row) { row = newRow(k, namespace, r.meta.name, texts.length); trs.set(k, row); }
      texts.forEach((t, j) => {
        if (row.texts[j] === t) return;
        row.texts[j] = t; row.tds[j].textContent = t;
        const cls = showNs && j === 0 ? '' : tone(t);
        if (row.tds[j].className !== cls) row.tds[j].className = cls;
      });
      row.box.checked = checked.has(k);
      if (row.tr.classList.contains('sel') !== (i === sel)) row.tr.classList.toggle('sel', i === sel);
      // Moves a row only when it is out of place.
      if (row.tr === next) next = next.nextSibling; else tbody.insertBefore(row.tr, next);
    });
    // A User Timing mark at the page's first full table (seen in DevTools; the tests read it).
    if (!p.listed) { p.listed = true; performance.clearMarks('k1s:list'); performance.mark('k1s:list', { detail: list.length }); }
  };
  const schedule = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(render); } };
  filter.oninput = () => { history.replaceState(null, '', hashWith('q', filter.value)); schedule(); };
  labels.onchange = () => { location.hash = hashWith('l', labels.value); };
  delSel.onclick = async () => {
    if (!confirm(`Delete ${checked.size} ${res.plural}?`)) return;
    for (const key of checked) {
      const [n, name] = key.split('/');
      try { await api(objectPath(res, n, name), { method: 'DELETE' }); } catch (e) { fill(err, errorBox(e)); }
    }
    checked.clear(); delSel.disabled = true;
  };
  const row = o => ({ cells: o.cells, meta: o.object?.metadata || {} });
  let path = basePath(res, ns());
  if (labels.value) path += '?labelSelector=' + encodeURIComponent(labels.value);
  const relist = async () => {
    const t = await getJSON(path, { accept: TABLE, signal: p.abort.signal });
    columns = t.columnDefinitions || [];
    rows.clear();
    for (const r of t.rows || []) { const x = row(r); rows.set(x.meta.uid || x.meta.name, x); }
    schedule();
    return t.metadata?.resourceVersion || '0';
  };
  p.keys = e => {
    const trs = table.querySelectorAll('tbody tr');
    if (e.key === 'j' || e.key === 'ArrowDown') sel = Math.min(sel + 1, trs.length - 1);
    else if (e.key === 'k' || e.key === 'ArrowUp') sel = Math.max(sel - 1, 0);
    else if (e.key === 'Enter' && trs[sel]) { trs[sel].click(); return true; }
    else return false;
    trs.forEach((tr, i) => tr.classList.toggle('sel', i === sel));
    trs[sel]?.scrollIntoView({ block: 'nearest' });
    return true;
  };
  try {
    await watchLoop(path, TABLE, p.abort.signal, relist, (type, t) => {
      if (t.columnDefinitions?.length) columns = t.columnDefinitions;
      for (const r of t.rows || []) {
        const x = row(r);
        if (type === 'DELETED') rows.delete(x.meta.uid || x.meta.name); else rows.set(x.meta.uid || x.meta.name, x);
      }
      schedule();
    });
  } catch (e) {
    if (!p.abort.signal.aborted) { fill(err, errorBox(e)); fill(table); }
  }
}

function hashWith(key, value) {
  const [path, qs] = location.hash.split('?');
  const params = new URLSearchParams(qs || '');
  if (value) params.set(key, value); else params.delete(key);
  const s = params.toString();
  return path + (s ? '?' + s : '');
}

// ---- workloads: rollout undo, job history -------------------------------------------------

const REVISION = 'deployment.kubernetes.io/revision';
// Annotations a rollback keeps from the Deployment instead of copying from the ReplicaSet
// (kubectl's list in rollback.go).
const KEEP_ON_ROLLBACK = ['kubectl.kubernetes.io/last-applied-configuration', REVISION,
  'deployment.kubernetes.io/revision-history', 'deployment.kubernetes.io/desired-replicas',
  'deployment.kubernetes.io/max-replicas', 'deprecated.deployment.rollback.to'];
const revisionOf = rs => {
  const v = rs.metadata.annotations?.[REVISION];
  return v != null && /^\d+$/.test(v) ? Number(v) : null;
};

// The ReplicaSet of revision `to`, or for 0 the newest but one (kubectl's choice).
function pickRevision(replicaSets, to) {
  let latest = null, previous = null;
  for (const rs of replicaSets) {
    const v = revisionOf(rs);
    if (v == null) continue;
    if (to) { if (v === to) return rs; continue; }
    if (!latest || v > revisionOf(latest)) { previous = latest; latest = rs; } else if (!previous || v > revisionOf(previous)) previous = rs;
  }
  return to ? null : previous;
}

// JSON with sorted keys and without empty values, so templates that only differ in how they
// were serialized compare equal (like apimachinery's semantic equality).
function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.keys(v).sort().filter(k => v[k] != null && !(typeof v[k] === 'object' && !Object.keys(v[k]).length))
      .map(k => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}

const withoutHash = t => {
  const c = structuredClone(t);
  if (c.metadata?.labels) delete c.metadata.labels['pod-template-hash'];
  return c;
};

// `kubectl rollout undo [--to-revision]`: read the Deployment and its own ReplicaSets afresh, and
// put the chosen revision's pod template (without pod-template-hash) back in one JSON patch that
// also replaces the annotations as kubectl does. Returns kubectl's message.
async function rollback(deployPath, rsListPath, name, to = 0) {
  const dep = await getJSON(deployPath);
  const mine = (await getJSON(rsListPath)).items.filter(rs =>
    (rs.metadata.ownerReferences || []).some(r => r.controller && r.uid === dep.metadata.uid));
  const rs = pickRevision(mine, to);
  if (!rs) throw new Error(to ? `unable to find specified revision ${to} in history` : `no rollout history found for deployment "${name}"`);
  if (dep.spec?.paused) throw new Error(`you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume deployment/${name}' and try again`);
  const template = withoutHash(rs.spec.template);
  if (canonical(template) === canonical(withoutHash(dep.spec.template))) return `skipped rollback (current template already matches revision ${to})`;
  const annotations = {};
  for (const k of KEEP_ON_ROLLBACK) if (dep.metadata.annotations?.[k] != null) annotations[k] = dep.metadata.annotations[k];
  for (const [k, v] of Object.entries(rs.metadata.annotations || {})) if (!KEEP_ON_ROLLBACK.includes(k)) annotations[k] = v;
  const patch = [{ op: 'replace', path: '/spec/template', value: template }, { op: 'replace', path: '/metadata/annotations', value: annotations }];
  try {
    await api(deployPath, { method: 'PATCH', type: 'application/json-patch+json', body: JSON.stringify(patch) });
  } catch (e) { e.message = `failed restoring revision ${to}: ${e.message}`; throw e; }
  return 'rolled back';
}

const when = ts => (ts ? h('span', { title: ts }, ts.slice(0, 19).replace('T', ' ')) : '');
function duration(from, to) {
  if (!from) return '';
  const s = Math.max(0, Math.round(((to ? Date.parse(to) : Date.now()) - Date.parse(from)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? (s % 60) + 's' : ''}`;
  return `${Math.floor(s / 3600)}h${Math.floor(s % 3600 / 60)}m`;
}

// A Job's state as kubectl's STATUS column words it.
function jobStatus(job) {
  const on = t => (job.status?.conditions || []).some(c => c.type === t && c.status === 'True');
  if (on('Failed')) return 'Failed';
  if (on('Complete')) return 'Complete';
  if (job.metadata.deletionTimestamp) return 'Terminating';
  if (on('FailureTarget')) return 'FailureTarget';
  if (on('SuccessCriteriaMet')) return 'SuccessCriteriaMet';
  if (on('Suspended')) return 'Suspended';
  return 'Running';
}

// A CronJob's Jobs, newest first.
function jobHistory(jobs, namespace) {
  const started = j => j.status?.startTime || j.metadata.creationTimestamp || '';
  jobs.sort((a, b) => started(b).localeCompare(started(a)) || b.metadata.name.localeCompare(a.metadata.name));
  return h('table', { class: 'grid', id: 'job-history' },
    h('tr', {}, ['Job', 'Start', 'Completion', 'Duration', 'Succeeded', 'Failed', 'Status'].map(t => h('th', {}, t))),
    jobs.map(j => {
      const st = jobStatus(j);
      return h('tr', { 'data-name': j.metadata.name },
        h('td', {}, h('a', { href: objectHash(kinds.get('jobs'), namespace, j.metadata.name) }, j.metadata.name)),
        h('td', {}, when(j.status?.startTime)), h('td', {}, when(j.status?.completionTime)),
        h('td', {}, duration(j.status?.startTime, j.status?.completionTime || (st === 'Failed' ? j.status?.conditions?.find(c => c.type === 'Failed')?.lastTransitionTime : null))),
        h('td', {}, j.status?.succeeded || 0), h('td', {}, j.status?.failed || 0),
        h('td', { class: st === 'Complete' ? 'ok' : st === 'Failed' ? 'bad' : 'warn' }, st));
    }));
}

// A Job's pods in the order they finished, with the running count of completions and failures.
function jobTimeline(job, pods, namespace) {
  const finished = pod => (pod.status?.containerStatuses || []).map(c => c.state?.terminated?.finishedAt).filter(Boolean).sort().pop() || null;
  const rows = pods.map(pod => ({ pod, end: /^(Succeeded|Failed)$/.test(pod.status?.phase) ? finished(pod) || pod.metadata.creationTimestamp : null }))
    .sort((a, b) => (a.end && b.end ? a.end.localeCompare(b.end) : a.end ? -1 : b.end ? 1 : 0) || (a.pod.status?.startTime || '').localeCompare(b.pod.status?.startTime || ''));
  let ok = 0, bad = 0;
  const spec = job.spec || {};
  return [h('p', { class: 'muted', id: 'job-progress' }, `succeeded ${job.status?.succeeded || 0}${spec.completions != null ? ' of ' + spec.completions : ''}, `
    + `failed ${job.status?.failed || 0} (backoffLimit ${spec.backoffLimit ?? 6}), active ${job.status?.active || 0}: ${jobStatus(job)}`),
  h('table', { class: 'grid', id: 'job-timeline' },
    h('tr', {}, ['Finished', 'Pod', 'Node', 'Started', 'Result', 'Succeeded so far', 'Failed so far'].map(t => h('th', {}, t))),
    rows.map(({ pod, end }) => {
      const phase = pod.status?.phase || 'Pending';
      if (end && phase === 'Succeeded') ok++; else if (end) bad++;
      return h('tr', { 'data-name': pod.metadata.name }, h('td', {}, end ? when(end) : '–'),
        h('td', {}, h('a', { href: objectHash(kinds.get('pods'), namespace, pod.metadata.name) }, pod.metadata.name)),
        h('td', {}, pod.spec?.nodeName || ''), h('td', {}, when(pod.status?.startTime)),
        h('td', { class: phase === 'Succeeded' ? 'ok' : phase === 'Failed' ? 'bad' : 'warn' }, phase),
        h('td', {}, end ? ok : ''), h('td', {}, end ? bad : ''));
    }))];
}

async function detailPage(p, plural, namespace, name) {
  const res = kinds.get(plural);
  if (!res) { fill(main, errorBox(new Error(`no kind ${plural}`))); return; }
  const path = objectPath(res, namespace, name);
  const title = h('h1', {}, h('a', { href: `#/r/${res.plural}` }, res.kind), ' ', name, namespace ? h('span', { class: 'muted' }, ` in ${namespace}`) : null);
  const actions = h('div', { class: 'actions' });
  const err = h('div', { id: 'detail-error' });
  const summary = h('div', { class: 'summary' });
  const yamlBox = h('div', { class: 'yamlbox' });
  const deps = h('section', { id: 'dependents' });
  const events = h('section', {}, h('h2', {}, 'Events'));
  const logs = h('section', { class: 'logs' });
  fill(main, title, actions, err, summary, deps, yamlBox, events, logs);
  let obj = null;
  let editing = null; // the textarea while editing
  let reveal = false;

  const shown = o => {
    if (res.kind !== 'Secret' || reveal || !o.data) return o;
    return { ...o, data: Object.fromEntries(Object.keys(o.data).map(k => [k, '••••••'])) };
  };
  const renderYaml = () => {
    if (editing) return;
    fill(yamlBox, yamlNode(shown(obj)));
  };
  const renderSummary = () => {
    const conds = obj.status?.conditions || [];
    const owners = obj.metadata.ownerReferences || [];
    fill(summary, 
      h('dl', {},
        h('dt', {}, 'Created'), h('dd', {}, `${obj.metadata.creationTimestamp || ''} (${age(obj.metadata.creationTimestamp)})`),
        h('dt', {}, 'Labels'), h('dd', {}, Object.entries(obj.metadata.labels || {}).map(([k, v]) => h('span', { class: 'tag' }, `${k}=${v}`))),
        owners.length ? [h('dt', {}, 'Owners'), h('dd', {}, owners.map(o => {
          const r = resources().find(x => x.kind === o.kind && (x.group ? `${x.group}/${x.version}` : x.version) === o.apiVersion);
          return r ? h('a', { href: objectHash(r, namespace, o.name) }, `${o.kind}/${o.name} `) : `${o.kind}/${o.name} `;
        }))] : null,
        obj.status?.phase ? [h('dt', {}, 'Phase'), h('dd', {}, obj.status.phase)] : null,
        obj.spec?.replicas != null ? [h('dt', {}, 'Replicas'), h('dd', { id: 'replicas' }, `${obj.status?.readyReplicas ?? 0} ready / ${obj.spec.replicas} desired`)] : null),
      conds.length ? h('table', { class: 'grid conditions' }, h('tr', {}, ['Condition', 'Status', 'Reason', 'Message'].map(t => h('th', {}, t))),
        conds.map(c => h('tr', {}, h('td', {}, c.type), h('td', { class: c.status === 'True' ? 'ok' : 'warn' }, c.status), h('td', {}, c.reason || ''), h('td', {}, c.message || '')))) : null);
  };

  const edit = () => {
    editing = h('textarea', { id: 'yaml-edit', spellcheck: 'false' });
    editing.value = toYAML(obj);
    const save = h('button', { id: 'save', class: 'primary' }, 'Save');
    const cancel = h('button', { id: 'cancel' }, 'Cancel');
    const note = h('div', { id: 'edit-note' });
    cancel.onclick = () => { editing = null; renderYaml(); };
    save.onclick = async () => {
      try {
        const r = await api(path, { method: 'PUT', type: 'application/yaml', body: editing.value });
        obj = await r.json();
        editing = null; renderYaml(); renderSummary(); toast('saved');
      } catch (e) {
        if (e.code !== 409) { fill(note, errorBox(e)); return; }
        // A stale edit: say so, and offer to drop it or to reapply it on the latest version.
        const reload = h('button', { id: 'conflict-reload' }, 'Discard my edit and reload');
        const reapply = h('button', { id: 'conflict-reapply' }, 'Keep my edit on the latest version');
        reload.onclick = async () => { obj = await getJSON(path); editing = null; renderYaml(); renderSummary(); };
        reapply.onclick = async () => {
          const latest = await getJSON(path);
          editing.value = editing.value.replace(/^(  resourceVersion: ).*$/m, `$1${JSON.stringify(latest.metadata.resourceVersion)}`);
          fill(note, h('p', { class: 'muted' }, 'Your edit now targets the latest version: review and save again.'));
        };
        fill(note, h('div', { class: 'conflict' }, h('b', {}, '409 Conflict: '), e.message, h('div', {}, reload, reapply)));
      }
    };
    fill(yamlBox, h('div', { class: 'bar' }, save, cancel), note, editing);
    editing.focus();
  };

  const renderActions = async () => {
    const b = (id, label, fn) => { const x = h('button', { id }, label); x.onclick = fn; return x; };
    fill(actions, 
      b('edit', 'Edit YAML (e)', edit),
      res.kind === 'Secret' ? b('reveal', 'Show values', () => { reveal = !reveal; renderYaml(); }) : null,
      ['Deployment', 'StatefulSet', 'ReplicaSet'].includes(res.kind) ? (() => {
        const n = h('input', { id: 'scale-to', type: 'number', min: 0, value: obj.spec?.replicas ?? 0, class: 'narrow' });
        const go = b('scale', 'Scale', async () => {
          try {
            await api(path + '/scale', { method: 'PATCH', type: 'application/merge-patch+json', body: JSON.stringify({ spec: { replicas: Number(n.value) } }) });
            toast(`scaled to ${n.value}`);
          } catch (e) { fill(err, errorBox(e)); }
        });
        return h('span', { class: 'group' }, n, go);
      })() : null,
      res.kind === 'Deployment' ? b('restart', 'Rollout restart', async () => {
        const patch = { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } };
        try { await api(path, { method: 'PATCH', type: 'application/strategic-merge-patch+json', body: JSON.stringify(patch) }); toast('restarted'); } catch (e) { fill(err, errorBox(e)); }
      }) : null,
      res.kind === 'Deployment' ? h('span', { class: 'group' }, (() => {
        // Enabled by loadDependents once it knows there is a revision to go back to.
        const u = b('undo', 'Rollout undo', () => undo(0));
        u.disabled = true;
        return u;
      })(), h('span', { id: 'undo-why', class: 'muted' })) : null,
      res.kind === 'Pod' ? b('logs', 'Logs (l)', () => showLogs()) : null,
      deleteButton(),
    );
    // RBAC-aware: a user who may not delete, scale or patch (restart, undo) this object sees
    // those buttons disabled, with the reason; without access reviews the server's 403 tells.
    const checks = [['delete', ''],
      ...(['Deployment', 'StatefulSet', 'ReplicaSet'].includes(res.kind) ? [['patch', 'scale']] : []),
      ...(res.kind === 'Deployment' ? [['patch', '']] : [])];
    await Promise.all(checks.map(async ([verb, subresource]) => {
      try {
        const review = await getJSON('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
          method: 'POST', type: 'application/json', body: JSON.stringify({
            apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: { verb, group: res.group, resource: res.plural, subresource, namespace: namespace || '', name } },
          }),
        });
        if (!review.status?.allowed) denied[verb + (subresource ? '/' + subresource : '')] = `RBAC: you may not ${verb} ${subresource ? res.plural + '/' + subresource : 'this object'}`;
      } catch { /* no access review */ }
    }));
    applyDenied();
  };
  const denied = {}; // 'verb[/subresource]' -> why, from the access reviews
  const DENIES = { delete: ['#delete'], 'patch/scale': ['#scale', '#scale-to'], patch: ['#restart', '#undo', '.undo-to'] };
  const applyDenied = () => {
    for (const [key, sels] of Object.entries(DENIES)) {
      if (!denied[key]) continue;
      for (const el of main.querySelectorAll(sels.join(','))) { el.disabled = true; el.title = denied[key]; }
      if (key === 'patch') { const why = $('#undo-why', actions); if (why) why.textContent = denied[key]; }
    }
  };
  const undo = async to => {
    try { toast(`deployment.apps/${name} ${await rollback(path, basePath(kinds.get('replicasets'), namespace), name, to)}`); fill(err); } catch (e) { fill(err, errorBox(e)); }
  };
  // The undo button says why it is disabled: no older revision, or a paused rollout.
  const undoState = replicaSets => {
    const u = $('#undo', actions), why = $('#undo-why', actions);
    if (!u) return;
    const reason = denied.patch || (obj.spec?.paused ? 'paused: resume the rollout first' : pickRevision(replicaSets, 0) ? '' : 'no previous revision to roll back to');
    u.disabled = !!reason; u.title = reason; why.textContent = reason;
  };
  const deleteButton = () => {
    const del = h('button', { id: 'delete', class: 'danger' }, 'Delete');
    del.onclick = () => {
      const yes = h('button', { id: 'confirm-delete', class: 'danger' }, `Yes, delete ${name}`);
      const no = h('button', {}, 'No');
      const box = h('span', { class: 'group' }, yes, no);
      no.onclick = () => box.replaceWith(del);
      yes.onclick = async () => {
        try { await api(path, { method: 'DELETE' }); toast(`deleted ${name}`); location.hash = `#/r/${res.plural}`; } catch (e) { fill(err, errorBox(e)); box.replaceWith(del); }
      };
      del.replaceWith(box);
    };
    return del;
  };

  // Owned objects as a picture: a Deployment's ReplicaSets (by revision) and their Pods
  // (coloured by phase and readiness, with their node); a ReplicaSet's, StatefulSet's,
  // DaemonSet's or Job's Pods. Redrawn on every change of the owner, so a rollout moves live.
  // Owner events come in bursts; only the newest load may draw, or an older, slower
  // load would paint stale counts over a newer one.
  let dependentsLoad = 0;
  const loadDependents = async () => {
    const load = ++dependentsLoad;
    const owns = { Deployment: 'replicasets', ReplicaSet: 'pods', StatefulSet: 'pods', DaemonSet: 'pods', Job: 'pods', CronJob: 'jobs' }[res.kind];
    if (!owns || !namespace) return;
    const owned = async (plural, uid) => (await getJSON(basePath(kinds.get(plural), namespace), { signal: p.abort.signal }))
      .items.filter(o => (o.metadata.ownerReferences || []).some(r => r.uid === uid));
    const podBox = pod => {
      const ready = (pod.status?.conditions || []).some(c => c.type === 'Ready' && c.status === 'True');
      const phase = pod.metadata.deletionTimestamp ? 'Terminating' : pod.status?.phase || 'Pending';
      return h('a', { class: `pod ${ready ? 'ready' : phase.toLowerCase()}`, href: objectHash(kinds.get('pods'), namespace, pod.metadata.name),
        title: `${pod.metadata.name}: ${phase}${ready ? ', ready' : ''}${pod.spec?.nodeName ? ' on ' + pod.spec.nodeName : ''}` },
      h('span', {}, pod.metadata.name), h('small', {}, pod.spec?.nodeName || 'unscheduled'));
    };
    try {
      if (owns === 'jobs') {
        const jobs = await owned('jobs', obj.metadata.uid);
        if (load === dependentsLoad) fill(deps, h('h2', {}, 'Jobs'), jobs.length ? jobHistory(jobs, namespace) : h('p', { class: 'muted' }, 'No jobs yet.'));
        return;
      }
      let groups;
      if (owns === 'pods') groups = [[null, await owned('pods', obj.metadata.uid)]];
      else {
        const children = (await owned(owns, obj.metadata.uid)).sort((a, b) =>
          Number(b.metadata.annotations?.['deployment.kubernetes.io/revision'] || 0) - Number(a.metadata.annotations?.['deployment.kubernetes.io/revision'] || 0));
        groups = await Promise.all(children.map(async c => [c, owns === 'replicasets' ? await owned('pods', c.metadata.uid) : []]));
      }
      if (load !== dependentsLoad) return;
      const newest = res.kind === 'Deployment' ? Math.max(0, ...groups.map(([c]) => revisionOf(c) ?? 0)) : 0;
      const undoTo = c => {
        const v = revisionOf(c);
        if (v == null || v === newest) return null;
        const x = h('button', { class: 'undo-to', 'data-revision': v }, `Roll back to ${v}`);
        x.onclick = () => undo(v);
        return x;
      };
      if (res.kind === 'Deployment') undoState(groups.map(([c]) => c));
      fill(deps, h('h2', {}, owns === 'pods' ? 'Pods' : 'ReplicaSets → Pods → Nodes'),
        groups.map(([c, pods]) => h('div', { class: 'owned' },
          c ? h('div', { class: 'owner' }, h('a', { href: objectHash(kinds.get(owns), namespace, c.metadata.name) }, c.metadata.name),
            c.metadata.annotations?.['deployment.kubernetes.io/revision'] ? h('span', { class: 'tag' }, 'revision ' + c.metadata.annotations['deployment.kubernetes.io/revision']) : null,
            c.spec?.replicas != null ? h('span', { class: 'muted' }, ` ${c.status?.readyReplicas || 0}/${c.spec.replicas} ready`) : null,
            c.spec?.template?.spec?.containers ? h('span', { class: 'muted' }, ' ' + c.spec.template.spec.containers.map(x => x.image).join(', ')) : null,
            res.kind === 'Deployment' ? undoTo(c) : null) : null,
          h('div', { class: 'pods' }, pods.map(podBox)))),
        res.kind === 'Job' ? jobTimeline(obj, groups[0][1], namespace) : null);
      applyDenied();
    } catch (e) { if (!p.abort.signal.aborted && load === dependentsLoad) fill(deps, errorBox(e)); }
  };

  const loadEvents = async () => {
    if (res.kind === 'Event') return;
    const evRes = kinds.get('events');
    const sel = `involvedObject.name=${name},involvedObject.kind=${res.kind}`;
    try {
      const l = await getJSON(basePath(evRes, namespace) + '?fieldSelector=' + encodeURIComponent(sel), { signal: p.abort.signal });
      const items = l.items.filter(e => e.involvedObject?.uid === obj.metadata.uid || !e.involvedObject?.uid)
        .sort((a, b) => (a.lastTimestamp || a.eventTime || '').localeCompare(b.lastTimestamp || b.eventTime || ''));
      fill(events, h('h2', {}, 'Events'), items.length ? h('table', { class: 'grid', id: 'events' },
        h('tr', {}, ['Type', 'Reason', 'Age', 'From', 'Message'].map(t => h('th', {}, t))),
        items.map(e => h('tr', {}, h('td', { class: e.type === 'Warning' ? 'warn' : '' }, e.type), h('td', {}, e.reason),
          h('td', {}, age(e.lastTimestamp || e.eventTime)), h('td', {}, e.source?.component || e.reportingComponent || ''), h('td', {}, e.message))))
        : h('p', { class: 'muted' }, 'No events.'));
    } catch (e) { if (!p.abort.signal.aborted) fill(events, h('h2', {}, 'Events'), errorBox(e)); }
  };

  let logAbort = null;
  const showLogs = async (container) => {
    logAbort?.abort(); logAbort = new AbortController();
    p.abort.signal.addEventListener('abort', () => logAbort.abort());
    const names = [...(obj.spec?.initContainers || []), ...(obj.spec?.containers || [])].map(c => c.name);
    const c = container || obj.spec?.containers?.[0]?.name;
    const pick = h('select', { id: 'log-container' }, names.map(n => h('option', { value: n, selected: n === c }, n)));
    pick.onchange = () => showLogs(pick.value);
    const pre = h('pre', { id: 'log', class: 'log' });
    fill(logs, h('h2', {}, 'Logs ', pick, h('span', { class: 'muted' }, ' (following; simulated nodes serve simulated output)')), pre);
    logs.scrollIntoView();
    try {
      const r = await api(`${path}/log?container=${encodeURIComponent(c)}&tailLines=1000&follow=true`, { accept: '*/*', signal: logAbort.signal });
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pre.append(value);
        if (pre.textContent.length > 2e6) pre.textContent = pre.textContent.slice(-1e6);
      }
    } catch (e) { if (!logAbort.signal.aborted) logs.append(errorBox(e)); }
  };

  p.keys = e => {
    if (e.key === 'e' && !editing) { edit(); return true; }
    if (e.key === 'l' && res.kind === 'Pod') { showLogs(); return true; }
    return false;
  };

  const fieldPath = basePath(res, namespace) + '?fieldSelector=' + encodeURIComponent('metadata.name=' + name);
  try {
    await watchLoop(fieldPath, 'application/json', p.abort.signal, async () => {
      obj = await getJSON(path, { signal: p.abort.signal });
      renderYaml(); renderSummary();
      if (!actions.childElementCount) renderActions();
      loadEvents(); loadDependents();
      return obj.metadata.resourceVersion;
    }, (type, o) => {
      if (type === 'DELETED') { fill(err, h('p', { class: 'error' }, `${res.kind} ${name} was deleted.`)); return; }
      obj = o;
      if (editing) $('#edit-note')?.replaceChildren(h('p', { class: 'muted' }, 'This object changed on the server since you began editing; saving will conflict.'));
      renderYaml(); renderSummary(); loadEvents(); loadDependents();
    });
  } catch (e) {
    if (!p.abort.signal.aborted) { fill(err, errorBox(e)); }
  }
}

// ---- navigation --------------------------------------------------------------------------

async function route() {
  const p = leave();
  const [path, qs] = location.hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(qs || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  document.querySelectorAll('#kinds a').forEach(a => a.classList.toggle('on', a.getAttribute('href') === '#/r/' + parts[1]));
  try {
    if (parts[0] === 'r' && parts[1]) await listPage(p, parts[1], params);
    else if (parts[0] === 'o' && parts.length >= 4) await detailPage(p, parts[1], parts[2] === '_' ? '' : parts[2], parts[3]);
    else await overview(p);
  } catch (e) {
    if (!p.abort.signal.aborted) fill(main, errorBox(e));
  }
}

const GO = { p: 'pods', d: 'deployments', s: 'services', n: 'nodes', c: 'configmaps', e: 'events', j: 'jobs', r: 'replicasets' };
let pendingG = false;

function palette() {
  const box = $('#palette'); const input = $('#palette-input');
  box.hidden = false; input.value = ''; input.focus();
  const list = h('datalist', { id: 'kind-list' }, [...kinds.keys()].sort().map(k => h('option', { value: k })));
  $('#kind-list')?.remove(); box.append(list); input.setAttribute('list', 'kind-list');
  input.onkeydown = e => {
    if (e.key === 'Escape') { box.hidden = true; }
    if (e.key === 'Enter') {
      const res = kinds.get(input.value.trim().toLowerCase());
      box.hidden = true;
      if (res) location.hash = `#/r/${res.plural}`; else toast(`no kind "${input.value}"`);
    }
  };
  input.onblur = () => { box.hidden = true; };
}

function onKey(e) {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName);
  if (typing) { if (e.key === 'Escape') e.target.blur(); return; }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (pendingG) {
    pendingG = false;
    if (e.key === 'o') { location.hash = '#/'; return; }
    if (GO[e.key]) { location.hash = `#/r/${GO[e.key]}`; return; }
  }
  if (e.key === 'g') { pendingG = true; return; }
  if (e.key === '/') { const f = $('#filter'); if (f) { e.preventDefault(); f.focus(); } return; }
  if (e.key === ':') { e.preventDefault(); palette(); return; }
  if (e.key === 'Escape' || e.key === 'Backspace') { history.back(); return; }
  if (page?.keys?.(e)) e.preventDefault();
}

async function loadNamespaces() {
  const sel = $('#ns');
  const keep = sessionStorage.getItem('k1s-ns') || '';
  try {
    const l = await getJSON('/api/v1/namespaces', { accept: META });
    fill(sel, h('option', { value: '' }, 'all namespaces'), l.items.map(n => h('option', { value: n.metadata.name }, n.metadata.name)));
  } catch { /* a user who cannot list namespaces still has "all" */ }
  sel.value = keep;
  sel.onchange = () => { sessionStorage.setItem('k1s-ns', sel.value); route(); };
  sel.onfocus = () => loadNamespaces();
}

function theme() {
  const saved = localStorage.getItem('k1s-theme');
  if (saved) document.documentElement.dataset.theme = saved;
  $('#theme').onclick = () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    const t = dark ? 'light' : 'dark';
    document.documentElement.dataset.theme = t; localStorage.setItem('k1s-theme', t);
  };
}

async function start() {
  theme();
  if (!(await login())) return;
  const out = $('#logout'); out.hidden = false;
  out.onclick = async () => {
    if (auth.mode === 'proxy') await fetch('/ui/logout', { method: 'POST', headers: headers() });
    sessionStorage.removeItem('k1s-token');
    location.hash = '#/'; location.reload();
  };
  try { await discover(); } catch (e) {
    fill(main, errorBox(e));
    if (e.code === 401) showLogin(auth.mode, e.message);
    return;
  }
  fill($('#kinds'), ...COMMON.filter(n => kinds.has(n)).map(n =>
    h('a', { href: `#/r/${n}` }, n === 'customresourcedefinitions' ? 'crds' : n)));
  loadNamespaces();
  addEventListener('hashchange', route);
  addEventListener('keydown', onKey);
  document.body.dataset.ready = 'true';
  route();
}

start();
