/* HTML pages. Each renders the model object of its view (the same object the API returns)
 * into r->body. Every value from the store goes through buf_html(). */
#ifndef QGMM_DASH_RENDER_H
#define QGMM_DASH_RENDER_H
#include "dom.h"
#include "server.h"

typedef void (*render_fn)(req *r, const jval *model);

void render_overview(req *r, const jval *m);
void render_matrix(req *r, const jval *m);
void render_series_list(req *r, const jval *m);
void render_series(req *r, const jval *m);
void render_runs(req *r, const jval *m);
void render_run(req *r, const jval *m);
void render_compare(req *r, const jval *m);
void render_regressions(req *r, const jval *m);
void render_regression(req *r, const jval *m);
/* A page that only says something (missing store, unknown id, bad parameter). */
void render_message(req *r, const char *title, const char *msg);

#endif
