/* params.h — what the Vulkan shaders and backends/vulkan/ (C) share besides each shader's
 * parameter struct (gemm_params.h, cast_params.h, dequant_params.h, blocked_params.h,
 * pad_params.h, offs_params.h, fill_params.h): the layout of the group table, and the size
 * of the numbered int64 block ep.comp reads (ep_params.h). */
#ifndef QGMM_GLSL_PARAMS_H
#define QGMM_GLSL_PARAMS_H

#define QP_MAX 64

/* shared by every op that takes group offsets: the group table written by offs_prep.comp
 * lives in the context's scratch buffer: word 0 = "offsets bad" flag, then G records of
 * TAB_STRIDE int32: start, end, padded start, padded end, tiles before, tiles through g. */
#define TAB_STRIDE 6
#define TAB_HEADER 4

#endif
