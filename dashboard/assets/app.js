/* qgmm-dash series chart: reads /api/v1/series/ID (the same data as the page's table) and
 * draws it with the vendored uPlot. Loaded as a file: the CSP allows no inline script. */
(function () {
  'use strict';
  var el = document.getElementById('chart');
  var hover = document.getElementById('hover');
  if (!el || typeof uPlot === 'undefined') return;

  function fmtUs(v) {
    if (v == null || !isFinite(v)) return '—';
    if (v >= 1e6) return (v / 1e6).toPrecision(3) + ' s';
    if (v >= 1e3) return (v / 1e3).toPrecision(3) + ' ms';
    return v.toPrecision(3) + ' µs';
  }
  function fmtDate(t) {
    return new Date(t * 1000).toISOString().slice(0, 16).replace('T', ' ');
  }
  function setText(node, parts) {
    /* Builds the hover line from text nodes only: values never become markup. */
    node.textContent = '';
    parts.forEach(function (p) {
      if (p.b) {
        var b = document.createElement('b');
        b.textContent = p.b;
        node.appendChild(b);
      } else {
        node.appendChild(document.createTextNode(p));
      }
    });
  }

  function draw(m) {
    var pts = m.points || [];
    if (!pts.length) {
      el.textContent = 'No results for this series yet.';
      return;
    }
    var xs = [], med = [], q1 = [], q3 = [], mn = [], bad = [], lowest = Infinity;
    pts.forEach(function (p, i) {
      var ok = p.status === 'ok' && p.median_us != null;
      xs.push(i);
      med.push(ok ? p.median_us : null);
      q1.push(ok ? p.q1_us : null);
      q3.push(ok ? p.q3_us : null);
      mn.push(ok ? p.min_us : null);
      if (ok && p.min_us < lowest) lowest = p.min_us;
    });
    pts.forEach(function (p, i) {
      var failed = p.status === 'error' || p.verdict === 'fail';
      bad.push(failed ? (med[i] != null ? med[i] : (isFinite(lowest) ? lowest : 0)) : null);
    });
    function rev(i) {
      var p = pts[Math.round(i)];
      return p ? String(p.revision).slice(0, 7) : '';
    }
    var opts = {
      width: Math.max(320, el.clientWidth),
      height: 360,
      /* One run: centre the lone point instead of uPlot's default 0..10 span. */
      scales: { x: pts.length === 1 ? { time: false, range: [-1, 1] } : { time: false } },
      axes: [
        { label: 'revision (one point per run, oldest left)', stroke: '#56606b',
          grid: { stroke: '#eef1f4' }, ticks: { stroke: '#e2e8f0' }, space: 70,
          incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
          values: function (u, splits) { return splits.map(rev); } },
        { label: 'kernel time', stroke: '#56606b', size: 76, grid: { stroke: '#eef1f4' },
          ticks: { stroke: '#e2e8f0' },
          values: function (u, splits) { return splits.map(fmtUs); } }
      ],
      series: [
        { label: 'revision', value: function (u, v) { return v == null ? '—' : rev(v); } },
        { label: 'q3', stroke: 'rgba(37,99,235,0.35)', width: 1, points: { show: false },
          value: function (u, v) { return fmtUs(v); } },
        { label: 'q1', stroke: 'rgba(37,99,235,0.35)', width: 1, points: { show: false },
          value: function (u, v) { return fmtUs(v); } },
        { label: 'median', stroke: '#2563eb', width: 2, points: { show: true, size: 6 },
          value: function (u, v) { return fmtUs(v); } },
        { label: 'min', stroke: '#64748b', width: 1, dash: [5, 4], points: { show: false },
          value: function (u, v) { return fmtUs(v); } },
        { label: 'failed', stroke: '#dc2626', fill: 'transparent', width: 0,
          paths: function () { return null; },
          points: { show: true, size: 11, stroke: '#dc2626', fill: '#dc2626' },
          value: function (u, v) { return v == null ? '' : 'yes'; } }
      ],
      bands: [{ series: [1, 2], fill: 'rgba(37,99,235,0.13)' }],
      cursor: { drag: { x: true, y: false }, points: { size: 8 } },
      hooks: {
        setCursor: [function (u) { show(u.cursor.idx); }],
        /* The visible x range, readable by people's devtools and the browser test. */
        setScale: [function (u, key) {
          if (key === 'x') el.setAttribute('data-xrange', u.scales.x.min + ':' + u.scales.x.max);
        }]
      }
    };
    var plot = new uPlot(opts, [xs, q3, q1, med, mn, bad], el);

    function show(i) {
      if (i == null || !pts[i]) return;
      var p = pts[i];
      var parts = ['run ', { b: String(p.run).slice(0, 8) }, ' · revision ',
                   { b: String(p.revision).slice(0, 10) }];
      if (p.subject) parts.push(' “' + p.subject + '”');
      parts.push(' · ' + fmtDate(p.started_at) + ' UTC · median ');
      parts.push({ b: fmtUs(p.median_us) });
      if (p.q1_us != null) parts.push(' (IQR ' + fmtUs(p.q1_us) + ' – ' + fmtUs(p.q3_us) + ')');
      parts.push(' · ' + (p.status !== 'ok' ? p.status : p.verdict));
      setText(hover, parts);
      hover.setAttribute('data-run', p.run);
      hover.setAttribute('data-revision', p.revision);
    }
    show(pts.length - 1);

    /* A click (not a drag-zoom, not half of the double-click that resets the zoom) on a
     * point opens its run. */
    var down = null, pending = null;
    plot.over.addEventListener('mousedown', function (e) { down = [e.clientX, e.clientY]; });
    plot.over.addEventListener('click', function (e) {
      var i = plot.cursor.idx;
      if (!down || Math.abs(e.clientX - down[0]) + Math.abs(e.clientY - down[1]) > 4) return;
      if (e.detail > 1 || i == null || !pts[i]) return;
      var url = '/runs/' + encodeURIComponent(pts[i].run);
      clearTimeout(pending);
      pending = setTimeout(function () { window.location.href = url; }, 300);
    });
    plot.over.addEventListener('dblclick', function () { clearTimeout(pending); });
    window.addEventListener('resize', function () {
      plot.setSize({ width: Math.max(320, el.clientWidth), height: 360 });
    });
  }

  fetch('/api/v1/series/' + encodeURIComponent(el.getAttribute('data-series')),
        { credentials: 'same-origin', headers: { Accept: 'application/json' } })
    .then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    })
    .then(draw)
    .catch(function (err) { el.textContent = 'Could not load the series: ' + err.message; });
})();
