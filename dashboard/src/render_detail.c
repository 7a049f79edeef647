/* HTML: matrix, series, run, compare, regressions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"
#include "render.h"

void render_regression_table(req *r, const jval *regs, int with_device);

/* Colour class of a speed ratio (reference time / cell time). */
static const char *ratio_class(double q) {
  if (!isfinite(q)) return "rn";
  if (q >= 1.5) return "r3";
  if (q >= 1.15) return "r2";
  if (q >= 1.03) return "r1";
  if (q > 1 / 1.03) return "r0";
  if (q > 1 / 1.15) return "s1";
  if (q > 1 / 1.5) return "s2";
  return "s3";
}

static void column_head(req *r, const jval *c) {
  h(r, jget_str(c, "device", ""));
  hf(r, "<br><b>");
  h(r, jget_str(c, "backend", ""));
  hf(r, "</b><br><span class=\"dim\">");
  h(r, jget_str(c, "hostname", ""));
  hf(r, "</span>");
}

void render_matrix(req *r, const jval *m) {
  const char *suite = jget_str(m, "suite", ""), *ref = jget_str(m, "ref", NULL);
  buf api = {0};
  buf_puts(&api, "/api/v1/matrix?suite=");
  buf_url(&api, suite);
  page_begin(r, "Matrix", "matrix", api.p ? api.p : "/api/v1/matrix");
  buf_free(&api);
  const jval *cols = json_get(m, "columns"), *rows = json_get(m, "rows");
  hf(r, "<div class=\"head\"><h1>Cross-vendor matrix</h1><p class=\"sub\">newest result of each "
        "series in suite <b>");
  h(r, suite);
  hf(r, "</b> · cells: median time, throughput, speed vs the reference column "
        "(×&#8239;&gt;&#8239;1 = faster)</p>");
  const jval *suites = json_get(m, "suites");
  if (suites && suites->len > 1) {
    hf(r, "<p class=\"chips\">suite: ");
    for (size_t i = 0; i < suites->len; i++) {
      const char *s = jget_str(suites->items[i], "suite", "");
      hf(r, "<a class=\"chip%s\" href=\"/matrix?suite=", strcmp(s, suite) ? "" : " on");
      buf_url(&r->body, s);
      hf(r, "\">");
      h(r, s);
      hf(r, "</a>");
    }
    hf(r, "</p>");
  }
  buf href = {0};
  buf_puts(&href, "/matrix?suite=");
  buf_url(&href, suite);
  if (ref) {
    buf_puts(&href, "&amp;ref=");
    buf_url(&href, ref);
  }
  buf_puts(&href, "&amp;");
  pager(r, href.p ? href.p : "/matrix?", "rows", jget_num(m, "total", 0), jget_num(m, "limit", 200),
        jget_num(m, "offset", 0));
  hf(r, "</div><section class=\"card scroll\">");
  if (!cols || !cols->len) {
    buf_free(&href);
    hf(r, "<p class=\"dim\">No results in this suite.</p></section>");
    page_end(r);
    return;
  }
  hf(r, "<table class=\"grid matrix\" id=\"matrix\"><thead><tr><th class=\"rowh\">op · shape</th>");
  for (size_t c = 0; c < cols->len; c++) {
    const char *key = jget_str(cols->items[c], "key", "");
    int is_ref = ref && !strcmp(ref, key);
    hf(r, "<th class=\"colh%s\">", is_ref ? " ref" : "");
    column_head(r, cols->items[c]);
    if (is_ref) hf(r, "<br><span class=\"badge state\">reference</span>");
    else {
      hf(r, "<br><a class=\"setref\" href=\"/matrix?suite=");
      buf_url(&r->body, suite);
      hf(r, "&amp;ref=");
      buf_url(&r->body, key);
      hf(r, "\">use as reference</a>");
    }
    hf(r, "</th>");
  }
  hf(r, "</tr></thead><tbody>");
  const char *last_role = NULL;
  for (size_t i = 0; rows && i < rows->len; i++) {
    const jval *row = rows->items[i];
    const char *role = jget_str(row, "role", "case");
    if (!last_role || strcmp(role, last_role)) {
      hf(r, "<tr class=\"group\"><th colspan=\"%zu\">%s</th></tr>", cols->len + 1,
         !strcmp(role, "case") ? "Ops" : !strcmp(role, "ceiling") ? "Ceilings (device limits)" : "Canary (noise)");
      last_role = role;
    }
    hf(r, "<tr><th class=\"rowh\"><span class=\"op\">");
    h(r, *jget_str(row, "label", "") ? jget_str(row, "label", "") : jget_str(row, "benchmark", ""));
    hf(r, "</span><br><span class=\"dim\">");
    if (strcmp(jget_str(row, "label", ""), jget_str(row, "benchmark", ""))) {
      h(r, jget_str(row, "benchmark", ""));
      hf(r, " · ");
    }
    h(r, jget_str(row, "shape", ""));
    hf(r, "</span></th>");
    const jval *cells = json_get(row, "cells");
    for (size_t c = 0; c < cols->len; c++) {
      const jval *cell = json_get(cells, jget_str(cols->items[c], "key", ""));
      if (!cell) {
        hf(r, "<td class=\"cell empty\"></td>");
        continue;
      }
      double q = jget_num(cell, "ratio", NAN);
      const char *st = jget_str(cell, "status", "ok"), *v = jget_str(cell, "verdict", "");
      /* unsupported is not a failure (docs/run-format.md): grey, not red */
      int failed = !strcmp(st, "error") || !strcmp(v, "fail");
      hf(r, "<td class=\"cell %s%s\"><a href=\"/series/%lld\" title=\"run ",
         failed ? "bad" : !strcmp(st, "unsupported") ? "na" : ratio_class(q),
         ref && !strcmp(ref, jget_str(cols->items[c], "key", "")) ? " refcell" : "",
         (long long)jget_num(cell, "series_id", 0));
      h(r, jget_str(cell, "run", ""));
      hf(r, "\"><span class=\"t\">");
      if (!strcmp(st, "ok")) fmt_us(r, jget_num(cell, "median_us", NAN));
      else h(r, st);
      hf(r, "</span><span class=\"rate\">");
      fmt_rate(r, cell);
      hf(r, "</span><span class=\"q\">");
      if (!strcmp(v, "fail")) hf(r, "numerics fail");
      else if (isfinite(q)) hf(r, "%.2f×", q);
      hf(r, "</span></a></td>");
    }
    hf(r, "</tr>");
  }
  hf(r, "</tbody><tfoot><tr><th class=\"rowh\">geomean vs reference<br><span class=\"dim\">"
        "ops that ran and passed numerics in both columns</span></th>");
  for (size_t c = 0; c < cols->len; c++) {
    double g = jget_num(cols->items[c], "geomean_ratio", NAN);
    hf(r, "<td class=\"cell %s geo\"><span class=\"q\">", ratio_class(g));
    if (isfinite(g)) hf(r, "%.3f×", g);
    else hf(r, "—");
    hf(r, "</span><span class=\"dim\">");
    buf_json_num(&r->body, jget_num(cols->items[c], "geomean_rows", 0));
    hf(r, " rows</span></td>");
  }
  hf(r, "</tr></tfoot></table>");
  pager(r, href.p ? href.p : "/matrix?", "rows", jget_num(m, "total", 0), jget_num(m, "limit", 200),
        jget_num(m, "offset", 0));
  buf_free(&href);
  hf(r, "</section>");
  page_end(r);
}

void render_series(req *r, const jval *m) {
  const jval *s = json_get(m, "series"), *pts = json_get(m, "points");
  long long id = (long long)jget_num(s, "id", 0);
  char api[64];
  snprintf(api, sizeof api, "/api/v1/series/%lld", id);
  const char *label = jget_str(s, "label", "");
  page_begin(r, *label ? label : jget_str(s, "benchmark", "Series"), "series", api);
  hf(r, "<div class=\"head\"><h1>");
  h(r, *label ? label : jget_str(s, "benchmark", ""));
  hf(r, " <span class=\"dim\">");
  h(r, jget_str(s, "shape", ""));
  hf(r, "</span></h1><p class=\"sub\"><b>");
  h(r, jget_str(s, "backend", ""));
  hf(r, "</b> on ");
  h(r, jget_str(s, "device", ""));
  hf(r, " (");
  h(r, jget_str(s, "hostname", ""));
  hf(r, ") · <code>");
  h(r, jget_str(s, "benchmark", ""));
  hf(r, "</code> <code>");
  h(r, jget_str(s, "params", ""));
  hf(r, "</code></p></div>");
  /* The chart: app.js reads the same JSON from the API (no inline script under the CSP). */
  hf(r, "<section class=\"card\"><h2>Median kernel time per run <span class=\"dim\">band: "
        "interquartile range · dashed: min · red: failed · drag to zoom, double-click to reset, "
        "click a point to open its run</span></h2>"
        "<div id=\"chart\" class=\"chart\" data-series=\"%lld\"></div>"
        "<div id=\"hover\" class=\"hover\" aria-live=\"polite\"></div></section>", id);
  const jval *sib = json_get(m, "siblings");
  if (sib && sib->len) {
    hf(r, "<section class=\"card\"><h2>Same case elsewhere</h2><p class=\"chips\">");
    for (size_t i = 0; i < sib->len; i++) {
      const jval *x = sib->items[i];
      hf(r, "<a class=\"chip\" href=\"/series/%lld\"><b>", (long long)jget_num(x, "series_id", 0));
      h(r, jget_str(x, "backend", ""));
      hf(r, "</b> ");
      h(r, jget_str(x, "device", ""));
      hf(r, " · ");
      fmt_us(r, jget_num(x, "latest_median_us", NAN));
      hf(r, "</a>");
    }
    hf(r, "</p></section>");
  }
  const jval *regs = json_get(m, "regressions");
  if (regs && regs->len) {
    hf(r, "<section class=\"card\"><h2>Regressions of this series</h2>");
    render_regression_table(r, regs, 0);
    hf(r, "</section>");
  }
  hf(r, "<section class=\"card\"><h2>Results, newest first</h2><table class=\"grid\" id=\"points\">"
        "<thead><tr><th>run</th><th>started</th><th>revision</th><th>numerics</th>"
        "<th class=\"num\">median</th><th class=\"num\">q1–q3</th><th class=\"num\">min</th>"
        "<th class=\"num\">rate</th><th class=\"num\">n</th><th>driver</th><th>message</th>"
        "</tr></thead><tbody>");
  for (size_t k = pts ? pts->len : 0; k-- > 0;) {
    const jval *p = pts->items[k];
    hf(r, "<tr><td>");
    run_link(r, jget_str(p, "run", NULL));
    hf(r, "</td><td>");
    fmt_when(r, jget_num(p, "started_at", NAN));
    hf(r, "</td><td>");
    sha_link(r, jget_str(p, "revision", NULL));
    hf(r, "</td><td>");
    verdict_badge(r, p);
    hf(r, "</td><td class=\"num median\">");
    fmt_us(r, jget_num(p, "median_us", NAN));
    hf(r, "</td><td class=\"num\">");
    fmt_us(r, jget_num(p, "q1_us", NAN));
    hf(r, " – ");
    fmt_us(r, jget_num(p, "q3_us", NAN));
    hf(r, "</td><td class=\"num\">");
    fmt_us(r, jget_num(p, "min_us", NAN));
    hf(r, "</td><td class=\"num\">");
    fmt_rate(r, p);
    hf(r, "</td><td class=\"num\">");
    buf_json_num(&r->body, jget_num(p, "n_samples", 0));
    hf(r, "</td><td>");
    h(r, jget_str(p, "driver", ""));
    hf(r, "</td><td class=\"msg\">");
    h(r, jget_str(p, "message", ""));
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table></section><script src=\"/static/uplot.min.js\"></script>"
        "<script src=\"/static/app.js\"></script>");
  page_end(r);
}

static void kv(req *r, const char *k, const jval *o, const char *key) {
  hf(r, "<dt>%s</dt><dd>", k);
  h_field(r, o, key);
  hf(r, "</dd>");
}

void render_run(req *r, const jval *m) {
  const jval *run = json_get(m, "run");
  const char *uuid = jget_str(run, "run", "");
  buf api = {0};
  buf_puts(&api, "/api/v1/runs/");
  buf_url(&api, uuid);
  page_begin(r, "Run", "runs", api.p ? api.p : "/api/v1/runs");
  buf_free(&api);
  hf(r, "<div class=\"head\"><h1>Run <code>");
  h(r, uuid);
  hf(r, "</code> ");
  const char *gate = jget_str(run, "gate", "");
  badge(r, !strcmp(gate, "pass") ? "pass" : !strcmp(gate, "warn") ? "warn" : "fail", gate);
  hf(r, "</h1><p class=\"sub\">");
  h(r, jget_str(run, "suite", ""));
  hf(r, " suite on ");
  h(r, jget_str(run, "hostname", ""));
  hf(r, ", started ");
  fmt_when(r, jget_num(run, "started_at", NAN));
  hf(r, " · ");
  buf_json_num(&r->body, jget_num(run, "pass", 0));
  hf(r, " pass · ");
  buf_json_num(&r->body, jget_num(run, "fail", 0));
  hf(r, " fail · ");
  buf_json_num(&r->body, jget_num(run, "error", 0));
  hf(r, " error</p></div><div class=\"cols\"><section class=\"card\"><h2>Run</h2><dl class=\"kv\">");
  kv(r, "reason", run, "reason");
  kv(r, "state", run, "state");
  hf(r, "<dt>finished</dt><dd>");
  fmt_when(r, jget_num(run, "finished_at", NAN));
  hf(r, "</dd>");
  kv(r, "runner", run, "runner");
  kv(r, "runner version", run, "runner_version");
  kv(r, "source", run, "source");
  kv(r, "environment", run, "env");
  hf(r, "</dl></section><section class=\"card\"><h2>Machine and revision</h2><dl class=\"kv\">");
  kv(r, "host", run, "hostname");
  kv(r, "cpu", run, "cpu");
  kv(r, "os", run, "os");
  kv(r, "cores", run, "cores");
  hf(r, "<dt>revision</dt><dd>");
  sha_link(r, jget_str(run, "revision", NULL));
  if (jget_num(run, "dirty", 0)) hf(r, " <span class=\"badge muted\">dirty tree</span>");
  hf(r, "</dd>");
  kv(r, "subject", run, "subject");
  kv(r, "branch", run, "branch");
  hf(r, "</dl></section></div>");
  const jval *ctx = json_get(m, "contexts");
  hf(r, "<section class=\"card\"><h2>Backends and devices</h2><table class=\"grid\"><thead><tr>"
        "<th>backend</th><th>device</th><th>arch</th><th>driver</th><th>runtime</th><th>describe</th>"
        "</tr></thead><tbody>");
  for (size_t i = 0; ctx && i < ctx->len; i++) {
    const jval *c = ctx->items[i];
    hf(r, "<tr><td><b>");
    h(r, jget_str(c, "backend", ""));
    hf(r, "</b></td><td>");
    h(r, jget_str(c, "device", ""));
    hf(r, "</td><td>");
    h(r, jget_str(c, "arch", ""));
    hf(r, "</td><td>");
    h(r, jget_str(c, "driver", ""));
    hf(r, "</td><td>");
    h(r, jget_str(c, "runtime", ""));
    hf(r, "</td><td class=\"msg\">");
    h(r, jget_str(c, "describe", ""));
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table></section>");
  const jval *regs = json_get(m, "regressions");
  if (regs && regs->len) {
    hf(r, "<section class=\"card\"><h2>Regressions flagged in this run</h2>");
    render_regression_table(r, regs, 0);
    hf(r, "</section>");
  }
  const jval *res = json_get(m, "results");
  hf(r, "<section class=\"card\"><h2>Results</h2><table class=\"grid\" id=\"results\"><thead><tr>"
        "<th>case</th><th>shape</th><th>backend</th><th>device</th><th>numerics</th>"
        "<th class=\"num\">median</th><th class=\"num\">rate</th><th class=\"num\">%% of ceiling</th>"
        "<th>check</th><th>message</th></tr></thead><tbody>");
  size_t suspect = 0; /* results above 100 % of their ceiling */
  for (size_t i = 0; res && i < res->len; i++) {
    const jval *x = res->items[i];
    hf(r, "<tr><td>");
    series_link(r, x);
    hf(r, "</td><td>");
    h(r, jget_str(x, "shape", ""));
    hf(r, "</td><td><b>");
    h(r, jget_str(x, "backend", ""));
    hf(r, "</b></td><td>");
    h(r, jget_str(x, "device", ""));
    hf(r, "</td><td>");
    verdict_badge(r, x);
    hf(r, "</td><td class=\"num median\">");
    fmt_us(r, jget_num(x, "median_us", NAN));
    hf(r, "</td><td class=\"num\">");
    fmt_rate(r, x);
    hf(r, "</td><td class=\"num\">");
    double pc = jget_num(x, "pct_of_ceiling", NAN);
    if (isfinite(pc)) hf(r, "%.1f", pc);
    if (pc > 100.0) {
      ++suspect;
      hf(r, "<span class=\"bad\" title=\"above 100 %% of its ceiling: that ceiling is suspect\">!</span>");
    }
    hf(r, "</td><td class=\"dim\">");
    h(r, jget_str(x, "threshold", ""));
    double sq = jget_num(x, "sqnr_db", NAN);
    if (isfinite(sq)) hf(r, " · SQNR %.1f dB", sq);
    hf(r, "</td><td class=\"msg\">");
    h(r, jget_str(x, "message", ""));
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table>");
  if (suspect)
    hf(r, "<p class=\"dim\" id=\"suspect-ceiling\"><span class=\"bad\">!</span> %zu result%s above 100 %% of "
          "the ceiling: that backend's ceiling is suspect (measured slower than the op itself), so those "
          "percentages mean nothing until it is fixed.</p>", suspect, suspect == 1 ? " is" : "s are");
  buf href = {0};
  buf_puts(&href, "/runs/");
  buf_url(&href, uuid);
  buf_puts(&href, "?");
  pager(r, href.p, "results", jget_num(m, "results_total", 0), jget_num(m, "results_limit", 500),
        jget_num(m, "results_offset", 0));
  buf_free(&href);
  hf(r, "</section>");
  page_end(r);
}

void render_compare(req *r, const jval *m) {
  const jval *a = json_get(m, "a"), *b = json_get(m, "b"), *sum = json_get(m, "summary");
  buf api = {0};
  buf_puts(&api, "/api/v1/compare?a=");
  buf_url(&api, jget_str(a, "run", ""));
  buf_puts(&api, "&b=");
  buf_url(&api, jget_str(b, "run", ""));
  page_begin(r, "Compare", "runs", api.p ? api.p : "/api/v1/compare");
  buf_free(&api);
  hf(r, "<div class=\"head\"><h1>Compare runs</h1><p class=\"sub\">A ");
  run_link(r, jget_str(a, "run", NULL));
  hf(r, " (");
  h(r, jget_str(a, "hostname", ""));
  hf(r, ", ");
  sha_link(r, jget_str(a, "revision", NULL));
  hf(r, ", ");
  fmt_when(r, jget_num(a, "started_at", NAN));
  hf(r, ") → B ");
  run_link(r, jget_str(b, "run", NULL));
  hf(r, " (");
  h(r, jget_str(b, "hostname", ""));
  hf(r, ", ");
  sha_link(r, jget_str(b, "revision", NULL));
  hf(r, ", ");
  fmt_when(r, jget_num(b, "started_at", NAN));
  hf(r, ")</p></div><section class=\"card\"><div class=\"stats\">");
  static const char *kinds[] = {"faster", "slower", "same", "numerics_fail", "numerics_fixed",
                                "not_ok", "now_ok", "not_run", "only_a", "only_b"};
  for (int k = 0; k < 10; k++) {
    hf(r, "<div class=\"stat %s\"><b>", kinds[k]);
    buf_json_num(&r->body, jget_num(sum, kinds[k], 0));
    hf(r, "</b>%s</div>", kinds[k]);
  }
  double g = jget_num(sum, "geomean_time_ratio", NAN);
  hf(r, "<div class=\"stat\"><b>");
  if (isfinite(g)) hf(r, "%.3f", g);
  else hf(r, "—");
  hf(r, "</b>geomean time B/A</div></div><p class=\"dim\">A time change counts only beyond "
        "max(5&#8239;%%, 3 × noise); noise is the larger half-IQR/median of the two results.</p>");
  const jval *rows = json_get(m, "rows");
  hf(r, "<table class=\"grid\" id=\"compare\"><thead><tr><th>case</th><th>shape</th><th>backend</th>"
        "<th>device</th><th class=\"num\">A median</th><th class=\"num\">B median</th>"
        "<th class=\"num\">Δ</th><th>verdict</th></tr></thead><tbody>");
  for (size_t i = 0; rows && i < rows->len; i++) {
    const jval *x = rows->items[i];
    const char *v = jget_str(x, "verdict", "");
    hf(r, "<tr><td>");
    series_link(r, x);
    hf(r, "</td><td>");
    h(r, jget_str(x, "shape", ""));
    hf(r, "</td><td><b>");
    h(r, jget_str(x, "backend", ""));
    hf(r, "</b></td><td>");
    h(r, jget_str(x, "device", ""));
    hf(r, "</td><td class=\"num\">");
    fmt_us(r, jget_num(x, "a_median_us", NAN));
    hf(r, "</td><td class=\"num\">");
    fmt_us(r, jget_num(x, "b_median_us", NAN));
    hf(r, "</td><td class=\"num %s\">", !strcmp(v, "slower") ? "bad" : !strcmp(v, "faster") ? "good" : "");
    fmt_pct(r, jget_num(x, "delta", NAN));
    hf(r, "</td><td>");
    badge(r, !strcmp(v, "slower") || !strcmp(v, "numerics_fail") || !strcmp(v, "not_ok") ? "fail"
             : !strcmp(v, "faster") || !strcmp(v, "numerics_fixed") ? "pass" : "muted", v);
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table>");
  buf href = {0};
  buf_puts(&href, "/compare?a=");
  buf_url(&href, jget_str(a, "run", ""));
  buf_puts(&href, "&amp;b=");
  buf_url(&href, jget_str(b, "run", ""));
  buf_puts(&href, "&amp;");
  pager(r, href.p, "rows", jget_num(m, "total", 0), jget_num(m, "limit", 500), jget_num(m, "offset", 0));
  buf_free(&href);
  hf(r, "</section>");
  page_end(r);
}

void render_regressions(req *r, const jval *m) {
  page_begin(r, "Regressions", "regressions", "/api/v1/regressions");
  const char *cur = req_param(r, "status");
  hf(r, "<div class=\"head\"><h1>Regressions</h1><p class=\"sub\">flagged by <code>qgmm-bench gate"
        "</code>, located by <code>qgmm-bench changepoints</code>; triage with <code>POST /api/v1/regressions/ID</code> and a triage token</p>"
        "<p class=\"chips\"><a class=\"chip%s\" href=\"/regressions\">all</a>", cur && *cur ? "" : " on");
  const jval *states = json_get(m, "states"), *counts = json_get(m, "counts");
  for (size_t i = 0; states && i < states->len; i++) {
    const char *s = states->items[i]->s;
    double n = 0;
    for (size_t k = 0; counts && k < counts->len; k++)
      if (!strcmp(jget_str(counts->items[k], "status", ""), s)) n = jget_num(counts->items[k], "n", 0);
    hf(r, "<a class=\"chip%s\" href=\"/regressions?status=%s\">%s <span class=\"dim\">%.0f</span></a>",
       cur && !strcmp(cur, s) ? " on" : "", s, s, n);
  }
  hf(r, "</p></div><section class=\"card\">");
  const jval *regs = json_get(m, "regressions");
  if (!regs || !regs->len) {
    hf(r, "<p class=\"ok-note\">Nothing here.</p>");
  } else {
    hf(r, "<table class=\"grid\" id=\"regressions\"><thead><tr><th>#</th><th>severity</th><th>status</th>"
          "<th>case</th><th>device · backend</th><th class=\"num\">change</th>"
          "<th class=\"num\">threshold</th><th class=\"num\">p</th><th>introduced in</th>"
          "<th>run</th><th>reason</th><th>note</th></tr></thead><tbody>");
    for (size_t i = 0; i < regs->len; i++) {
      const jval *g = regs->items[i];
      hf(r, "<tr><td><a href=\"/regressions/%lld\">%lld</a></td><td>", (long long)jget_num(g, "id", 0),
         (long long)jget_num(g, "id", 0));
      badge(r, !strcmp(jget_str(g, "severity", ""), "fail") ? "fail" : "warn", jget_str(g, "severity", ""));
      hf(r, " <span class=\"dim\">");
      h(r, jget_str(g, "kind", ""));
      hf(r, "</span></td><td>");
      badge(r, "state", jget_str(g, "status", ""));
      hf(r, "</td><td>");
      series_link(r, g);
      hf(r, " <span class=\"dim\">");
      h(r, jget_str(g, "shape", ""));
      hf(r, "</span></td><td>");
      h(r, jget_str(g, "device", ""));
      hf(r, " · <b>");
      h(r, jget_str(g, "backend", ""));
      hf(r, "</b></td><td class=\"num bad\">");
      fmt_pct(r, jget_num(g, "change", NAN));
      hf(r, "</td><td class=\"num\">");
      double thr = jget_num(g, "threshold", NAN);
      if (isfinite(thr)) hf(r, "%.1f&#8239;%%", thr * 100);
      else hf(r, "<span class=\"dim\">—</span>");
      hf(r, "</td><td class=\"num\">");
      double p = jget_num(g, "p_value", NAN);
      if (isfinite(p)) hf(r, "%.1e", p);
      hf(r, "</td><td>");
      /* the first bad revision is the answer people want; the last good one bounds the
       * range to bisect when runs skipped revisions */
      hf(r, "<span class=\"introduced\">");
      sha_link(r, jget_str(g, "first_bad_revision", NULL));
      hf(r, "</span>");
      if (jget_str(g, "last_good_revision", NULL)) {
        hf(r, " <span class=\"dim\">last good ");
        sha_link(r, jget_str(g, "last_good_revision", NULL));
        hf(r, "</span>");
      }
      hf(r, "</td><td>");
      run_link(r, jget_str(g, "run", NULL));
      hf(r, "</td><td class=\"msg\">");
      h(r, jget_str(g, "reason", ""));
      hf(r, "</td><td class=\"msg\">");
      h(r, jget_str(g, "note", ""));
      hf(r, "</td></tr>");
    }
    hf(r, "</tbody></table>");
  }
  hf(r, "</section>");
  page_end(r);
}

void render_regression(req *r, const jval *g) {
  char api[64];
  snprintf(api, sizeof api, "/api/v1/regressions/%lld", (long long)jget_num(g, "id", 0));
  page_begin(r, "Regression", "regressions", api);
  hf(r, "<div class=\"head\"><h1>Regression %lld ", (long long)jget_num(g, "id", 0));
  badge(r, "state", jget_str(g, "status", ""));
  hf(r, "</h1><p class=\"sub\">");
  series_link(r, g);
  hf(r, " · ");
  h(r, jget_str(g, "device", ""));
  hf(r, " · <b>");
  h(r, jget_str(g, "backend", ""));
  hf(r, "</b></p></div><section class=\"card\"><dl class=\"kv\">");
  static const char *keys[] = {"kind", "severity", "reason", "note", "baseline_runs", "baseline_median_us",
                               "current_median_us", "change", "threshold", "noise", "p_value",
                               "last_good_revision", "first_bad_revision", "after_runs", "driver"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) kv(r, keys[i], g, keys[i]);
  hf(r, "<dt>run</dt><dd>");
  run_link(r, jget_str(g, "run", NULL));
  hf(r, "</dd><dt>detected</dt><dd>");
  fmt_when(r, jget_num(g, "detected_at", NAN));
  hf(r, "</dd></dl></section>");
  page_end(r);
}
