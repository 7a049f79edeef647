/*
 * qgmm_version: the version libqgmm was built as. The number is written once, in the
 * top-level CMakeLists.txt (project VERSION), and reaches this file as a define.
 */
#include "qgmm.h"

#ifndef QGMM_VERSION_STRING
#error "QGMM_VERSION_STRING comes from api/CMakeLists.txt (the project's VERSION)"
#endif

const char *qgmm_version(void)
{
    return QGMM_VERSION_STRING;
}
