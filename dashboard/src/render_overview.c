/* HTML: overview, runs list, series list, and the plain message page. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"
#include "render.h"

void render_message(req *r, const char *title, const char *msg) {
  page_begin(r, title, NULL, NULL);
  hf(r, "<section class=\"card message\"><h1>");
  h(r, title);
  hf(r, "</h1><p>");
  h(r, msg);
  hf(r, "</p><p><a href=\"/\">Back to the overview</a></p></section>");
  page_end(r);
}

static void gate_badge(req *r, const char *gate) {
  badge(r, !strcmp(gate, "pass") ? "pass" : !strcmp(gate, "warn") ? "warn" : "fail", gate);
}

static void regression_rows(req *r, const jval *regs, int with_device) {
  hf(r, "<table class=\"grid\"><thead><tr><th>severity</th><th>case</th>");
  if (with_device) hf(r, "<th>device · backend</th>");
  hf(r, "<th class=\"num\">change</th><th>kind</th><th>status</th><th>run</th><th>detected</th>"
        "</tr></thead><tbody>");
  for (size_t i = 0; regs && i < regs->len; i++) {
    const jval *g = regs->items[i];
    hf(r, "<tr><td>");
    badge(r, !strcmp(jget_str(g, "severity", ""), "fail") ? "fail" : "warn", jget_str(g, "severity", ""));
    hf(r, "</td><td>");
    series_link(r, g);
    hf(r, " <span class=\"dim\">");
    h(r, jget_str(g, "shape", ""));
    hf(r, "</span></td>");
    if (with_device) {
      hf(r, "<td>");
      h(r, jget_str(g, "device", ""));
      hf(r, " · <b>");
      h(r, jget_str(g, "backend", ""));
      hf(r, "</b></td>");
    }
    hf(r, "<td class=\"num\">");
    fmt_pct(r, jget_num(g, "change", NAN));
    hf(r, "</td><td>");
    h(r, jget_str(g, "kind", ""));
    hf(r, "</td><td>");
    badge(r, "state", jget_str(g, "status", ""));
    hf(r, "</td><td>");
    run_link(r, jget_str(g, "run", NULL));
    hf(r, "</td><td>");
    fmt_when(r, jget_num(g, "detected_at", NAN));
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table>");
}

void render_overview(req *r, const jval *m) {
  page_begin(r, "Overview", "overview", "/api/v1/overview");
  const jval *st = json_get(m, "store");
  const jval *latest = json_get(m, "latest");
  hf(r, "<div class=\"head\"><h1>Overview</h1><p class=\"sub\">");
  buf_json_num(&r->body, jget_num(st, "runs", 0));
  hf(r, " runs · ");
  buf_json_num(&r->body, jget_num(st, "machines", 0));
  hf(r, " machines · ");
  buf_json_num(&r->body, jget_num(st, "series", 0));
  hf(r, " series · latest run ");
  fmt_when(r, jget_num(st, "latest_run_at", NAN));
  hf(r, "</p></div>");

  hf(r, "<section class=\"card\"><h2>Latest run per device and backend</h2>");
  if (!latest || !latest->len) {
    hf(r, "<p class=\"dim\">No runs stored yet.</p>");
  } else {
    hf(r, "<table class=\"grid\" id=\"latest\"><thead><tr><th>gate</th><th>machine</th><th>device</th>"
          "<th>backend</th><th class=\"num\">pass</th><th class=\"num\">fail</th>"
          "<th class=\"num\">error</th><th class=\"num\">unchecked</th><th class=\"num\">unsup.</th>"
          "<th class=\"num\">open regr.</th><th>suite</th><th>revision</th><th>run</th><th>started</th>"
          "</tr></thead><tbody>");
    for (size_t i = 0; i < latest->len; i++) {
      const jval *x = latest->items[i];
      hf(r, "<tr><td>");
      gate_badge(r, jget_str(x, "gate", "?"));
      hf(r, "</td><td>");
      h(r, jget_str(x, "hostname", ""));
      hf(r, "</td><td>");
      h(r, jget_str(x, "device", ""));
      hf(r, "</td><td><b>");
      h(r, jget_str(x, "backend", ""));
      hf(r, "</b></td>");
      static const char *cnt[] = {"pass", "fail", "error", "unchecked", "unsupported"};
      for (int k = 0; k < 5; k++) {
        double v = jget_num(x, cnt[k], 0);
        hf(r, "<td class=\"num%s\">", v > 0 && (k == 1 || k == 2) ? " bad" : "");
        buf_json_num(&r->body, v);
        hf(r, "</td>");
      }
      hf(r, "<td class=\"num\">");
      buf_json_num(&r->body, jget_num(x, "regressions_fail", 0) + jget_num(x, "regressions_warn", 0));
      hf(r, "</td><td>");
      h(r, jget_str(x, "suite", ""));
      hf(r, "</td><td>");
      sha_link(r, jget_str(x, "revision", NULL));
      if (jget_num(x, "dirty", 0)) hf(r, " <span class=\"badge muted\">dirty</span>");
      hf(r, "</td><td>");
      run_link(r, jget_str(x, "run", NULL));
      hf(r, "</td><td>");
      fmt_when(r, jget_num(x, "started_at", NAN));
      hf(r, "</td></tr>");
    }
    hf(r, "</tbody></table>");
  }
  hf(r, "</section>");

  hf(r, "<div class=\"cols\"><section class=\"card\"><h2>Op families <span class=\"dim\">"
        "relative time over the last runs (1.0 = each series' usual time; lower is faster)"
        "</span></h2>");
  const jval *fams = json_get(m, "families");
  if (!fams || !fams->len) hf(r, "<p class=\"dim\">No measured cases yet.</p>");
  else {
    hf(r, "<table class=\"grid fam\"><thead><tr><th>family</th><th>trend</th>"
          "<th class=\"num\">latest</th><th class=\"num\">series</th></tr></thead><tbody>");
    for (size_t i = 0; i < fams->len; i++) {
      const jval *f = fams->items[i];
      const jval *pts = json_get(f, "points");
      int n = pts ? (int)pts->len : 0;
      double *v = calloc((size_t)n + 1, sizeof *v);
      for (int k = 0; v && k < n; k++) v[k] = jget_num(pts->items[k], "relative_time", NAN);
      hf(r, "<tr><td><a href=\"/series?benchmark=");
      buf_url(&r->body, jget_str(f, "benchmark", ""));
      hf(r, "\">");
      h(r, jget_str(f, "benchmark", ""));
      hf(r, "</a></td><td>");
      if (v) sparkline(r, v, n, 180, 30);
      double last = v && n ? v[n - 1] : NAN;
      hf(r, "</td><td class=\"num%s\">", last > 1.05 ? " bad" : last < 0.95 ? " good" : "");
      if (isfinite(last)) hf(r, "%.3f", last);
      hf(r, "</td><td class=\"num\">");
      buf_json_num(&r->body, jget_num(f, "n_series", 0));
      hf(r, "</td></tr>");
      free(v);
    }
    hf(r, "</tbody></table>");
  }
  hf(r, "</section><section class=\"card\"><h2>Newest open regressions <a class=\"more\" "
        "href=\"/regressions\">all</a></h2>");
  const jval *regs = json_get(m, "regressions");
  if (!regs || !regs->len) hf(r, "<p class=\"ok-note\">No open regressions.</p>");
  else regression_rows(r, regs, 1);
  hf(r, "</section></div>");
  page_end(r);
}

void render_runs(req *r, const jval *m) {
  page_begin(r, "Runs", "runs", "/api/v1/runs");
  const jval *runs = json_get(m, "runs");
  hf(r, "<div class=\"head\"><h1>Runs</h1><p class=\"sub\">");
  buf_json_num(&r->body, jget_num(m, "total", 0));
  hf(r, " stored, newest first</p></div><section class=\"card\">");
  hf(r, "<table class=\"grid\" id=\"runs\"><thead><tr><th>run</th><th>started</th><th>machine</th>"
        "<th>suite</th><th>backends</th><th>revision</th><th class=\"num\">results</th>"
        "<th class=\"num\">pass</th><th class=\"num\">fail</th><th class=\"num\">error</th>"
        "<th>source</th><th>compare</th></tr></thead><tbody>");
  for (size_t i = 0; runs && i < runs->len; i++) {
    const jval *x = runs->items[i];
    hf(r, "<tr><td>");
    run_link(r, jget_str(x, "run", NULL));
    /* a run still measuring, or stopped before its end (state from the run_status view) */
    const char *state = jget_str(x, "state", "complete");
    if (strcmp(state, "complete") != 0) {
      hf(r, " ");
      badge(r, strcmp(state, "running") == 0 ? "warn" : "fail", state);
    }
    hf(r, "</td><td>");
    fmt_when(r, jget_num(x, "started_at", NAN));
    hf(r, "</td><td>");
    h(r, jget_str(x, "hostname", ""));
    hf(r, "</td><td>");
    h(r, jget_str(x, "suite", ""));
    hf(r, "</td><td>");
    h(r, jget_str(x, "backends", ""));
    hf(r, "</td><td>");
    sha_link(r, jget_str(x, "revision", NULL));
    hf(r, " <span class=\"dim subj\">");
    h(r, jget_str(x, "subject", ""));
    hf(r, "</span></td>");
    static const char *cnt[] = {"results", "pass", "fail", "error"};
    for (int k = 0; k < 4; k++) {
      double v = jget_num(x, cnt[k], 0);
      hf(r, "<td class=\"num%s\">", v > 0 && k >= 2 ? " bad" : "");
      buf_json_num(&r->body, v);
      hf(r, "</td>");
    }
    hf(r, "<td>");
    h(r, jget_str(x, "source", ""));
    hf(r, "</td><td>");
    /* Previous run of the same machine and suite further down the (newest-first) list. */
    for (size_t k = i + 1; k < runs->len; k++) {
      const jval *p = runs->items[k];
      if (strcmp(jget_str(p, "hostname", ""), jget_str(x, "hostname", "")) ||
          strcmp(jget_str(p, "suite", ""), jget_str(x, "suite", "")))
        continue;
      hf(r, "<a href=\"/compare?a=");
      buf_url(&r->body, jget_str(p, "run", ""));
      hf(r, "&amp;b=");
      buf_url(&r->body, jget_str(x, "run", ""));
      hf(r, "\">vs previous</a>");
      break;
    }
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table>");
  double total = jget_num(m, "total", 0), lim = jget_num(m, "limit", 50), off = jget_num(m, "offset", 0);
  hf(r, "<p class=\"pager\">");
  if (off > 0) hf(r, "<a href=\"/runs?offset=%.0f&amp;limit=%.0f\">newer</a> ", fmax(0, off - lim), lim);
  if (off + lim < total) hf(r, "<a href=\"/runs?offset=%.0f&amp;limit=%.0f\">older</a>", off + lim, lim);
  hf(r, "</p></section>");
  page_end(r);
}

void render_series_list(req *r, const jval *m) {
  page_begin(r, "Series", "series", "/api/v1/series");
  const jval *list = json_get(m, "series");
  const char *bench = req_param(r, "benchmark");
  hf(r, "<div class=\"head\"><h1>Series");
  if (bench && *bench) {
    hf(r, " · ");
    h(r, bench);
  }
  hf(r, "</h1><p class=\"sub\">one benchmark case on one device through one backend</p></div>"
        "<section class=\"card\"><table class=\"grid\"><thead><tr><th>case</th><th>benchmark</th>"
        "<th>shape</th><th>role</th><th>machine</th><th>device</th><th>backend</th>"
        "<th class=\"num\">results</th></tr></thead><tbody>");
  for (size_t i = 0; list && i < list->len; i++) {
    const jval *x = list->items[i];
    hf(r, "<tr><td>");
    series_link(r, x);
    hf(r, "</td><td>");
    h(r, jget_str(x, "benchmark", ""));
    hf(r, "</td><td>");
    h(r, jget_str(x, "shape", ""));
    hf(r, "</td><td>");
    h(r, jget_str(x, "role", ""));
    hf(r, "</td><td>");
    h(r, jget_str(x, "hostname", ""));
    hf(r, "</td><td>");
    h(r, jget_str(x, "device", ""));
    hf(r, "</td><td><b>");
    h(r, jget_str(x, "backend", ""));
    hf(r, "</b></td><td class=\"num\">");
    buf_json_num(&r->body, jget_num(x, "results", 0));
    hf(r, "</td></tr>");
  }
  hf(r, "</tbody></table>");
  buf href = {0};
  const char *be = req_param(r, "backend");
  buf_puts(&href, "/series?");
  if (bench && *bench) {
    buf_puts(&href, "benchmark=");
    buf_url(&href, bench);
    buf_puts(&href, "&amp;");
  }
  if (be && *be) {
    buf_puts(&href, "backend=");
    buf_url(&href, be);
    buf_puts(&href, "&amp;");
  }
  pager(r, href.p, "series", jget_num(m, "total", 0), jget_num(m, "limit", 500), jget_num(m, "offset", 0));
  buf_free(&href);
  hf(r, "</section>");
  page_end(r);
}

void render_regression_table(req *r, const jval *regs, int with_device);
void render_regression_table(req *r, const jval *regs, int with_device) {
  regression_rows(r, regs, with_device);
}
