/* Page frame and the small formatting helpers the HTML views share. Everything that
 * comes from the store is written through h() (HTML-escaped). */
#ifndef QGMM_DASH_PAGE_H
#define QGMM_DASH_PAGE_H
#include "buf.h"
#include "dom.h"
#include "server.h"

void page_begin(req *r, const char *title, const char *nav, const char *api_href);
void page_end(req *r);

void h(req *r, const char *s);                         /* escaped text */
void hf(req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* trusted markup */
void h_field(req *r, const jval *o, const char *key); /* escaped string/number or an em dash */

void fmt_us(req *r, double us);        /* 812 µs / 40.9 ms / 1.23 s */
void fmt_rate(req *r, const jval *o);  /* "123 GB/s" or "456 TFLOP/s" from gbps/tflops */
void fmt_when(req *r, double t);    /* 2026-11-22 15:40 UTC */
void fmt_pct(req *r, double frac);     /* +12.3 % */
void badge(req *r, const char *cls, const char *text);
void verdict_badge(req *r, const jval *o);  /* from status + verdict */
void sha_link(req *r, const char *sha);     /* short sha (no link target: no repo URL known) */
void run_link(req *r, const char *uuid);
void series_link(req *r, const jval *o);    /* label or benchmark, linking series_id */
/* "NOUN 201–400 of 150000 · previous · next" for a paginated list. href is the page's
 * address with its other parameters, HTML-escaped, ending in '?' or "&amp;"; the links
 * append offset= and limit=. Writes nothing when everything fits on one page. */
void pager(req *r, const char *href, const char *noun, double total, double limit, double offset);
/* Inline SVG polyline of the values (NaN skipped); lower is better when lower_better. */
void sparkline(req *r, const double *v, int n, int w, int hgt);

#endif
