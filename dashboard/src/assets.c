#include "assets.h"

#include <string.h>

const dash_asset *dash_asset_find(const char *name) {
  for (const dash_asset *a = dash_assets; a->name; a++)
    if (strcmp(a->name, name) == 0) return a;
  return NULL;
}
