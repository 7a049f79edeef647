/* params.h — slot numbers of the int64 parameter block each qgmm Vulkan shader reads (the
 * grouped GEMM's, the casts' and dequant's are structs: gemm_params.h, cast_params.h,
 * dequant_params.h). Included by the GLSL shaders and by backends/vulkan/ (C), so both
 * sides agree. */
#ifndef QGMM_GLSL_PARAMS_H
#define QGMM_GLSL_PARAMS_H

#define QP_MAX 64

/* shared by every op that takes group offsets: the group table written by offs_prep.comp
 * lives in the context's scratch buffer: word 0 = "offsets bad" flag, then G records of
 * TAB_STRIDE int32: start, end, padded start, padded end, tiles before, tiles through g. */
#define TAB_STRIDE 6
#define TAB_HEADER 4

/* ---- fill.comp */
#define FILL_DST 0
#define FILL_BYTES 1
#define FILL_VALUE 2

/* ---- copy.comp: 16-byte units, COPY_PER_LANE per lane */
#define COPY_SRC 0
#define COPY_DST 1
#define COPY_UNITS 2
#define COPY_PER_LANE 8

/* ---- offs_prep.comp: validate offsets, build the group table */
#define OP_OFFS 0      /* i32 (G) */
#define OP_G 1
#define OP_EXTENT 2
#define OP_MULTIPLE 3  /* every group size a multiple of this (1 = any) */
#define OP_ALIGN 4     /* padded size = align * ceil(size / align) */
#define OP_TILE 5      /* tiles before g count ceil(size / tile) (0 = unused) */
#define OP_TABLE 6     /* scratch address */
#define OP_STATUS 7    /* context status word address */
#define OP_OUT0 8      /* optional i32 (G): padded start (0 = absent) */
#define OP_OUT1 9      /* optional i32 (G): padded end offsets (0 = absent) */
#define OP_PADOFFS 10  /* optional i32 (G) input: padded offsets to validate (row ids) */
#define OP_DIV 11      /* group bounds are divided by this before padding (K-groups: 32) */
#define OP_PADCAP 12   /* cap + 1 (0 = none): the padded total must not exceed cap (unpad: rows
                          of x_padded); with OP_PADOFFS: padded offsets must stay within it */

#endif
