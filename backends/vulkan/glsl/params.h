/* params.h — what the Vulkan shaders and backends/vulkan/ (C) share besides each shader's
 * parameter struct (gemm_params.h, cast_params.h, dequant_params.h, blocked_params.h,
 * pad_params.h, offs_params.h, fill_params.h, ep_params.h): the layout of the group table. */
#ifndef QGMM_GLSL_PARAMS_H
#define QGMM_GLSL_PARAMS_H

/* shared by every op that takes group offsets: the group table written by offs_prep.comp
 * lives in the context's scratch buffer: word 0 = "offsets bad" flag, then G records of
 * TAB_STRIDE int32: start, end, padded start, padded end, tiles before, tiles through g. */
#define TAB_STRIDE 6
#define TAB_HEADER 4

#endif
