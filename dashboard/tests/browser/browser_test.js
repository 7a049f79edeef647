#!/usr/bin/env node
/* Real-browser test of qgmm-dash: headless Chromium (Debian's /usr/bin/chromium) driven by
 * playwright-core. Builds the fixture store, serves it, opens every page, checks the numbers
 * shown against the SQLite store, the chart, hover and click-through, that no console error
 * or dialog (XSS) happens, and saves screenshots under --out.
 * Exit 77 (ctest SKIP) when Chromium or playwright-core is missing; never passes silently.
 *   node browser_test.js --dash BIN --fixture make_fixture.py --out DIR */
'use strict';
const fs = require('fs');
const path = require('path');
const { spawn, spawnSync } = require('child_process');

function arg(name, def) {
  const i = process.argv.indexOf('--' + name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}
if (process.argv.includes('--help')) {
  console.log('usage: browser_test.js --dash BIN --fixture make_fixture.py --out DIR [--bench QGMM_BENCH] [--chromium PATH]');
  process.exit(0);
}
const dash = arg('dash'), fixture = arg('fixture'), out = arg('out', 'dash-artifacts');
const chromiumPath = arg('chromium', process.env.CHROMIUM || '/usr/bin/chromium');
const bench = arg('bench'); /* optional: also serve a store filled by the runner's smoke suite */
if (!dash || !fixture) {
  console.error('browser_test: --dash and --fixture are required');
  process.exit(2);
}
if (!fs.existsSync(chromiumPath)) {
  console.log('SKIP: no Chromium at ' + chromiumPath + ' (apt-get install chromium)');
  process.exit(77);
}
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  console.log('SKIP: playwright-core not installed (cd dashboard/tests/browser && npm install)');
  process.exit(77);
}

fs.mkdirSync(out, { recursive: true });
const db = path.join(out, 'fixture.db');
let failures = 0, checks = 0;
function check(cond, what) {
  checks++;
  if (!cond) {
    failures++;
    console.error('FAIL: ' + what);
  } else {
    console.log('ok: ' + what);
  }
}

/* The store is the truth: queries go through python's sqlite3 (read-only). */
function sql(query, params, store) {
  const py = 'import json,sqlite3,sys\n' +
    'c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True)\n' +
    'c.row_factory=sqlite3.Row\n' +
    'print(json.dumps([dict(r) for r in c.execute(sys.argv[2],json.loads(sys.argv[3]))]))';
  const r = spawnSync('python3', ['-c', py, store || db, query, JSON.stringify(params || [])], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('sql failed: ' + r.stderr);
  return JSON.parse(r.stdout);
}
function fmtUs(v) { /* the pages' format: 3 significant digits */
  if (v >= 1e6) return (v / 1e6).toPrecision(3) + ' s';
  if (v >= 1e3) return (v / 1e3).toPrecision(3) + ' ms';
  return v.toPrecision(3) + ' µs';
}
function norm(s) { return s.replace(/[\u202f\u00a0]/g, ' ').replace(/\s+/g, ' ').trim(); }
function cFormat(v) { /* C's %.3g for the values used here, as the server prints them */
  const s = Number(v).toPrecision(3);
  return String(Number(s)) === s.replace(/\.?0+$/, '') ? String(Number(s)) : s;
}

function startServer(store) {
  return new Promise((resolve, reject) => {
    const p = spawn(dash, ['--db', store || db, '--listen', '127.0.0.1:0', '--quiet'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
      const m = /at http:\/\/127\.0\.0\.1:(\d+)\//.exec(err);
      if (m) resolve({ proc: p, base: 'http://127.0.0.1:' + m[1] });
    });
    p.on('exit', (c) => reject(new Error('qgmm-dash exited ' + c + ': ' + err)));
    setTimeout(() => reject(new Error('qgmm-dash did not start: ' + err)), 15000);
  });
}

async function main() {
  const fx = spawnSync('python3', [fixture, '--dash', dash, '--db', db, '--workdir', out], { encoding: 'utf8' });
  if (fx.status !== 0) throw new Error('fixture failed: ' + fx.stderr + fx.stdout);
  console.log(fx.stdout.trim());
  const srv = await startServer();
  const browser = await chromium.launch({
    executablePath: chromiumPath, headless: true,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-dev-shm-usage', '--disable-extensions', '--no-first-run'] });
  try {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
    const page = await ctx.newPage();
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push('console ' + m.type() + ': ' + m.text()); });
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('requestfailed', (r) => problems.push('request failed: ' + r.url()));
    page.on('dialog', async (d) => { problems.push('DIALOG (script ran): ' + d.message()); await d.dismiss(); });
    async function open(url, shot) {
      problems.length = 0;
      const resp = await page.goto(srv.base + url, { waitUntil: 'networkidle' });
      check(resp && resp.status() === 200, url + ' answers 200 (got ' + (resp && resp.status()) + ')');
      const csp = resp && resp.headers()['content-security-policy'];
      check(csp && csp.includes("script-src 'self'"), url + ' carries the CSP header');
      if (shot) await page.screenshot({ path: path.join(out, shot), fullPage: true });
      return resp;
    }
    function clean(url) { check(problems.length === 0, url + ' has no console errors or dialogs' + (problems.length ? ': ' + problems.join(' | ') : '')); }

    /* ---------------------------------------------------------------- overview */
    await open('/', 'overview.png');
    const nruns = sql('SELECT count(*) AS n FROM run')[0].n;
    const sub = norm(await page.textContent('.head .sub'));
    check(sub.startsWith(nruns + ' runs'), 'overview shows the store\'s run count ' + nruns + ' (' + sub + ')');
    const cudaRow = page.locator('#latest tbody tr', { hasText: 'cuda' }).first();
    const cells = (await cudaRow.locator('td').allTextContents()).map(norm);
    const dbCuda = sql("SELECT sum(x.verdict = 'pass') AS pass FROM result x JOIN context c ON c.id = x.context_id " +
      "WHERE c.backend = 'cuda' AND c.run_id = (SELECT c2.run_id FROM context c2 JOIN run r ON r.id = c2.run_id " +
      "WHERE c2.backend = 'cuda' ORDER BY r.started_at DESC LIMIT 1)")[0];
    check(cells[4] === String(dbCuda.pass), 'overview cuda pass count ' + cells[4] + ' = store ' + dbCuda.pass);
    check(cells[0] === 'fail', 'overview cuda gate is fail (open regression): ' + cells[0]);
    check(await page.locator('svg.spark polyline').count() >= 3, 'overview draws a sparkline per op family');
    clean('/');

    /* ---------------------------------------------------------------- matrix */
    await open('/matrix', 'matrix.png');
    const mrow = sql("SELECT x.median_us, s.id FROM result x JOIN series s ON s.id = x.series_id JOIN run r ON r.id = x.run_id " +
      "WHERE s.backend = 'cuda' AND s.label = 'grouped GEMM bf16 (M-grouped)' AND r.suite = 'nightly' ORDER BY r.started_at DESC LIMIT 1")[0];
    const cellText = norm(await page.locator('#matrix a[href="/series/' + mrow.id + '"] .t').textContent());
    check(cellText === fmtUs(mrow.median_us).replace(/^([\d.]+)/, (m) => cFormat(m)),
          'matrix cuda bf16 GEMM cell ' + cellText + ' = store median ' + mrow.median_us);
    const nrows = sql("SELECT count(DISTINCT s.benchmark || s.params) AS n FROM series s JOIN result x ON x.series_id = s.id " +
      "JOIN run r ON r.id = x.run_id WHERE r.suite = 'nightly'")[0].n;
    const shownRows = await page.locator('#matrix tbody tr:not(.group)').count();
    check(shownRows === nrows, 'matrix shows one row per op x shape: ' + shownRows + ' = ' + nrows);
    check((await page.locator('#matrix th.colh').allTextContents()).some((t) => t.includes('torch')), 'matrix has a torch peer column');
    clean('/matrix');

    /* ---------------------------------------------------------------- series + chart */
    await open('/series/' + mrow.id, null);
    await page.waitForSelector('#chart canvas', { timeout: 10000 });
    check(await page.locator('#chart canvas').count() === 1, 'series chart renders a canvas');
    const pts = sql('SELECT rv.sha, r.uuid FROM result x JOIN run r ON r.id = x.run_id JOIN revision rv ON rv.id = r.revision_id ' +
      'WHERE x.series_id = ? ORDER BY r.started_at', [mrow.id]);
    const over = page.locator('#chart .u-over');
    const box = await over.boundingBox();
    await page.mouse.move(box.x + 2, box.y + box.height / 2);
    await page.mouse.move(box.x + 3, box.y + box.height / 2);
    const firstRev = await page.getAttribute('#hover', 'data-revision');
    check(firstRev === pts[0].sha, 'hover at the left shows the first revision ' + (firstRev || '').slice(0, 10));
    check(norm(await page.textContent('#hover')).includes(pts[0].sha.slice(0, 10)), 'hover text names the revision');
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    const lastRun = await page.getAttribute('#hover', 'data-run');
    check(lastRun === pts[pts.length - 1].uuid, 'hover at the right shows the newest run');
    await page.screenshot({ path: path.join(out, 'series.png'), fullPage: true });
    const span = (r) => { const [a, b] = String(r).split(':').map(Number); return b - a; };
    const full = await page.getAttribute('#chart', 'data-xrange');
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2, { steps: 8 });
    await page.mouse.up();
    const zoomed = await page.getAttribute('#chart', 'data-xrange');
    check(full && zoomed && span(zoomed) < span(full) * 0.6, 'drag zooms the chart (' + full + ' -> ' + zoomed + ')');
    await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
    const reset = await page.getAttribute('#chart', 'data-xrange');
    check(reset && span(reset) === span(full), 'double-click resets the zoom (' + reset + ')');
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    await Promise.all([page.waitForNavigation(), page.mouse.click(box.x + box.width - 2, box.y + box.height / 2)]);
    check(page.url().endsWith('/runs/' + pts[pts.length - 1].uuid), 'clicking a chart point opens its run');
    await open('/series/' + mrow.id, null);
    await page.waitForSelector('#chart canvas', { timeout: 10000 });
    const tableRows = await page.locator('#points tbody tr').count();
    check(tableRows === pts.length, 'series table lists every result: ' + tableRows + ' = ' + pts.length);
    clean('/series/' + mrow.id);
    /* A regression series has failure markers too: the mxfp8 CUDA series and a failing Vulkan GEMM. */
    const failing = sql("SELECT series_id FROM result WHERE verdict = 'fail' LIMIT 1")[0];
    await open('/series/' + failing.series_id, 'series-failure.png');
    await page.waitForSelector('#chart canvas', { timeout: 10000 });
    clean('/series/' + failing.series_id);

    /* ---------------------------------------------------------------- click through to a run */
    await open('/', null);
    const link = page.locator('#latest tbody tr', { hasText: 'cuda' }).first().locator('a.run');
    const uuid = await link.getAttribute('title');
    await Promise.all([page.waitForNavigation(), link.click()]);
    check(page.url().endsWith('/runs/' + uuid), 'clicking the run link opens /runs/' + uuid.slice(0, 8));
    const nres = sql('SELECT count(*) AS n FROM result x JOIN run r ON r.id = x.run_id WHERE r.uuid = ?', [uuid])[0].n;
    check(await page.locator('#results tbody tr').count() === nres, 'run page lists its ' + nres + ' results');
    await page.screenshot({ path: path.join(out, 'run.png'), fullPage: true });
    clean('/runs/' + uuid);

    /* ---------------------------------------------------------------- runs, compare, regressions */
    await open('/runs', 'runs.png');
    const cmp = page.locator('#runs a', { hasText: 'vs previous' }).first();
    await Promise.all([page.waitForNavigation(), cmp.click()]);
    check(page.url().includes('/compare?a='), 'runs list links to a comparison');
    check(await page.locator('#compare tbody tr').count() > 0, 'compare lists series');
    await page.screenshot({ path: path.join(out, 'compare.png'), fullPage: true });
    clean('/compare');
    await open('/regressions', 'regressions.png');
    const nreg = sql('SELECT count(*) AS n FROM regression')[0].n;
    check(await page.locator('#regressions tbody tr').count() === nreg, 'regressions page lists all ' + nreg);
    clean('/regressions');

    /* ---------------------------------------------------------------- hostile strings stay text */
    await open('/runs/00000000-0000-4000-8000-00000000bad1', 'hostile.png');
    const txt = await page.textContent('main');
    check(txt.includes("<script>alert(5)</script>"), 'hostile label shown as text');
    check(await page.locator('main script, main img, main iframe, main svg[onload]').count() === 0,
          'no markup injected from stored strings');
    clean('/runs/<hostile>');
    await open('/', null);
    clean('/ with hostile run');

    /* ---------------------------------------------------------------- the runner's own store */
    if (bench) {
      const smoke = path.join(out, 'smoke.db');
      for (const f of [smoke, smoke + '-wal', smoke + '-shm']) if (fs.existsSync(f)) fs.unlinkSync(f);
      const run = spawnSync(bench, ['run', '--suite', 'smoke', '--backend', 'cpu', '--db', smoke, '--budget-ms', '20'],
                            { encoding: 'utf8' });
      check(run.status === 0, 'qgmm-bench smoke run filled a store (rc ' + run.status + ')');
      if (run.status === 0) {
        const s2 = await startServer(smoke);
        try {
          const base = srv.base;
          srv.base = s2.base;
          await open('/', 'smoke-overview.png');
          const n = sql("SELECT count(*) AS n FROM result WHERE verdict = 'pass'", [], smoke)[0].n;
          const row = (await page.locator('#latest tbody tr').first().locator('td').allTextContents()).map(norm);
          check(row[4] === String(n), 'smoke overview pass count ' + row[4] + ' = store ' + n);
          clean('smoke /');
          await open('/matrix', 'smoke-matrix.png');
          const c = sql("SELECT s.id, x.median_us FROM result x JOIN series s ON s.id = x.series_id WHERE x.status = 'ok' " +
                        "AND s.role = 'case' ORDER BY s.id LIMIT 1", [], smoke)[0];
          const t = norm(await page.locator('#matrix a[href="/series/' + c.id + '"] .t').textContent());
          check(t === fmtUs(c.median_us).replace(/^([\d.]+)/, (m) => cFormat(m)), 'smoke matrix cell ' + t + ' = store ' + c.median_us);
          clean('smoke /matrix');
          await open('/series/' + c.id, null);
          await page.waitForSelector('#chart canvas', { timeout: 10000 });
          await page.screenshot({ path: path.join(out, 'smoke-series.png'), fullPage: true });
          clean('smoke /series');
          srv.base = base;
        } finally {
          s2.proc.kill('SIGTERM');
        }
      }
    }
  } finally {
    await browser.close();
    srv.proc.kill('SIGTERM');
  }
  console.log('browser test: ' + checks + ' checks, ' + failures + ' failed; screenshots in ' + out);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.error('browser test error: ' + (e && e.stack || e));
  process.exit(1);
});
