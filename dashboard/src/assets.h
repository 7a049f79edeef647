/* Static assets compiled into the binary (see dashboard/embed_assets.cmake). */
#ifndef QGMM_DASH_ASSETS_H
#define QGMM_DASH_ASSETS_H
#include <stddef.h>

typedef struct {
  const char *name;          /* path under /static/, e.g. "uplot.min.js" */
  const char *type;          /* Content-Type */
  const unsigned char *data; /* NUL-terminated copy, size bytes before the NUL */
  size_t size;
} dash_asset;

extern const dash_asset dash_assets[];
const dash_asset *dash_asset_find(const char *name);

#endif
