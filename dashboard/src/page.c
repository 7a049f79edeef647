#include "page.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void h(req *r, const char *s) { buf_html(&r->body, s); }

void hf(req *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(&r->body, fmt, ap);
  va_end(ap);
}

void h_field(req *r, const jval *o, const char *key) {
  jval *v = json_get(o, key);
  if (!v || v->t == J_NULL || (v->t == J_STR && !*v->s)) {
    hf(r, "<span class=\"dim\">—</span>");
  } else if (v->t == J_STR) {
    h(r, v->s);
  } else if (v->t == J_NUM) {
    buf_json_num(&r->body, v->n);
  } else if (v->t == J_BOOL) {
    hf(r, v->b ? "yes" : "no");
  }
}

static const struct {
  const char *key, *href, *label;
} NAV[] = {{"overview", "/", "Overview"},
           {"matrix", "/matrix", "Matrix"},
           {"regressions", "/regressions", "Regressions"},
           {"runs", "/runs", "Runs"},
           {"series", "/series", "Series"}};

void page_begin(req *r, const char *title, const char *nav, const char *api_href) {
  r->ctype = "text/html; charset=utf-8";
  r->body.len = 0;
  hf(r,
     "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
     "<title>");
  h(r, title);
  hf(r,
     " · qgmm</title><link rel=\"icon\" href=\"/static/favicon.svg\" type=\"image/svg+xml\">"
     "<link rel=\"stylesheet\" href=\"/static/uplot.min.css\">"
     "<link rel=\"stylesheet\" href=\"/static/app.css\"></head><body>"
     "<header class=\"top\"><a class=\"brand\" href=\"/\">qgmm<span>perf</span></a><nav>");
  for (size_t i = 0; i < sizeof NAV / sizeof *NAV; i++)
    hf(r, "<a href=\"%s\"%s>%s</a>", NAV[i].href,
       nav && !strcmp(nav, NAV[i].key) ? " class=\"on\" aria-current=\"page\"" : "", NAV[i].label);
  hf(r, "</nav>");
  if (api_href) {
    hf(r, "<a class=\"api\" href=\"");
    h(r, api_href);
    hf(r, "\">JSON</a>");
  }
  hf(r, "</header><main>");
}

void page_end(req *r) {
  hf(r, "</main><footer>qgmm-dash · store <code>");
  h(r, r->cfg->db_path);
  hf(r, "</code> · all times UTC</footer></body></html>\n");
}

void fmt_us(req *r, double us) {
  if (!isfinite(us)) {
    hf(r, "<span class=\"dim\">—</span>");
  } else if (us >= 1e6) {
    hf(r, "%.3g&#8239;s", us / 1e6);
  } else if (us >= 1e3) {
    hf(r, "%.3g&#8239;ms", us / 1e3);
  } else {
    hf(r, "%.3g&#8239;µs", us);
  }
}

void fmt_rate(req *r, const jval *o) {
  double tf = jget_num(o, "tflops", NAN), gb = jget_num(o, "gbps", NAN);
  /* Three significant digits, but never an exponent: 2265 GB/s, not 2.27e+03. */
  double v = isfinite(tf) ? tf : gb;
  if (!isfinite(v)) return;
  hf(r, v >= 100 ? "%.0f&#8239;%s" : "%.3g&#8239;%s", v, isfinite(tf) ? "TFLOP/s" : "GB/s");
}

void fmt_when(req *r, double t) {
  if (!isfinite(t)) {
    hf(r, "<span class=\"dim\">—</span>");
    return;
  }
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  char s[32];
  strftime(s, sizeof s, "%Y-%m-%d %H:%M", &tm);
  hf(r, "<time>%s</time>", s);
}

void fmt_pct(req *r, double frac) {
  if (!isfinite(frac)) hf(r, "<span class=\"dim\">—</span>");
  else hf(r, "%+.1f&#8239;%%", frac * 100);
}

void badge(req *r, const char *cls, const char *text) {
  hf(r, "<span class=\"badge %s\">", cls);
  h(r, text);
  hf(r, "</span>");
}

void verdict_badge(req *r, const jval *o) {
  const char *st = jget_str(o, "status", "ok"), *v = jget_str(o, "verdict", "unchecked");
  if (strcmp(st, "error") == 0) badge(r, "fail", "error");
  else if (strcmp(st, "unsupported") == 0) badge(r, "muted", "unsupported");
  else if (strcmp(v, "pass") == 0) badge(r, "pass", "pass");
  else if (strcmp(v, "fail") == 0) badge(r, "fail", "fail");
  else badge(r, "muted", "unchecked");
}

void sha_link(req *r, const char *sha) {
  if (!sha) return;
  char s[11];
  snprintf(s, sizeof s, "%s", sha);
  hf(r, "<code class=\"sha\" title=\"");
  h(r, sha);
  hf(r, "\">");
  h(r, s);
  hf(r, "</code>");
}

void run_link(req *r, const char *uuid) {
  if (!uuid) return;
  char s[9];
  snprintf(s, sizeof s, "%s", uuid);
  hf(r, "<a class=\"run\" href=\"/runs/");
  buf_url(&r->body, uuid);
  hf(r, "\" title=\"");
  h(r, uuid);
  hf(r, "\"><code>");
  h(r, s);
  hf(r, "</code></a>");
}

void series_link(req *r, const jval *o) {
  const char *label = jget_str(o, "label", "");
  hf(r, "<a href=\"/series/%lld\">", (long long)jget_num(o, "series_id", 0));
  h(r, *label ? label : jget_str(o, "benchmark", "?"));
  hf(r, "</a>");
}

void sparkline(req *r, const double *v, int n, int w, int hgt) {
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) {
      lo = fmin(lo, v[i]);
      hi = fmax(hi, v[i]);
    }
  hf(r, "<svg class=\"spark\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
        "aria-label=\"trend\">", w, hgt, w, hgt);
  if (n >= 1 && isfinite(lo)) {
    if (hi - lo < 1e-12) {
      lo -= 0.5;
      hi += 0.5;
    }
    /* Reference line at 1.0 (the family's usual speed) when it is in range. */
    if (lo <= 1.0 && hi >= 1.0) {
      double y = 2 + (hgt - 4) * (1 - (1.0 - lo) / (hi - lo));
      hf(r, "<line class=\"base\" x1=\"0\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", w, y, y);
    }
    hf(r, "<polyline points=\"");
    double lx = 0, ly = 0;
    for (int i = 0; i < n; i++) {
      if (!isfinite(v[i])) continue;
      lx = n == 1 ? w / 2.0 : 2 + (w - 4) * (double)i / (n - 1);
      ly = 2 + (hgt - 4) * (1 - (v[i] - lo) / (hi - lo));
      hf(r, "%.1f,%.1f ", lx, ly);
    }
    hf(r, "\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"/>", lx, ly);
  }
  hf(r, "</svg>");
}

void pager(req *r, const char *href, const char *noun, double total, double limit, double offset) {
  if (offset <= 0 && total <= limit) return;
  hf(r, "<p class=\"pager\">%s %.0f–%.0f of %.0f", noun, total ? offset + 1 : 0, fmin(offset + limit, total), total);
  if (offset > 0)
    hf(r, " · <a href=\"%soffset=%.0f&amp;limit=%.0f\">previous</a>", href, fmax(0, offset - limit), limit);
  if (offset + limit < total)
    hf(r, " · <a href=\"%soffset=%.0f&amp;limit=%.0f\">next</a>", href, offset + limit, limit);
  hf(r, "</p>");
}
