/* params.h — slot numbers of the int64 parameter block each qgmm Vulkan shader reads (the
 * grouped GEMM's and the casts' are structs: gemm_params.h, cast_params.h). Included by the
 * GLSL shaders and by backends/vulkan/ (C), so both sides agree. */
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

/* ---- dequant.comp: elementwise inverse of the casts */
#define DQ_Q 0
#define DQ_FMT 1
#define DQ_S 2
#define DQ_SKIND 3     /* 0 f32 strided, 1 byte strided, 2 byte blocked */
#define DQ_MODE 4      /* 0 divide by scale, 1 multiply by scale, 2 e8m0 */
#define DQ_OUT 5
#define DQ_OUTDT 6
#define DQ_QE 7
#define DQ_QO 8
#define DQ_QR 9
#define DQ_OE 10
#define DQ_OO 11
#define DQ_OR 12
#define DQ_SE 13
#define DQ_SO 14
#define DQ_SG 15
#define DQ_E 16
#define DQ_O 17
#define DQ_R 18
#define DQ_L 19
#define DQ_NSEG 20
#define DQ_ODIV 21     /* scale row index = o / ODIV (128 for 128x128 tiles) */
#define DQ_COLSPAD 22
#define DQ_EXPBYTES 23
#define DQ_TABLE 24
#define DQ_N 25        /* total elements */


/* ---- blocked.comp: scales to / from the blocked layout */
#define BL_DIR 0       /* 0 plain -> blocked (one lane per blocked byte), 1 blocked -> plain,
                          2 zero the grouped layout's bytes that hold no scale */
#define BL_VAR 1
#define BL_PLAIN 2
#define BL_PE 3
#define BL_PR 4
#define BL_PC 5
#define BL_BLK 6
#define BL_BSTRIDE 7
#define BL_BLEN 8
#define BL_E 9
#define BL_R 10
#define BL_C 11
#define BL_COLSPAD 12
#define BL_ROWSPAD 13
#define BL_PEREXP 14
#define BL_G 15
#define BL_TABLE 16
#define BL_N 17
#define BL_WORDS 18    /* to-blocked: 1 = the blocked buffer takes 4-byte stores (unit stride, aligned) */

/* ---- pad.comp: pad / unpad token groups, group row ids */
#define PD_MODE 0      /* 0 pad, 1 unpad, 2 row ids */
#define PD_X 1
#define PD_XS0 2
#define PD_XS1 3
#define PD_OUT 4
#define PD_OS0 5
#define PD_OS1 6
#define PD_ROWS 7      /* output rows */
#define PD_D 8
#define PD_ESIZE 9
#define PD_G 10
#define PD_TABLE 11
#define PD_PADDED 12   /* row ids: table fields 2/3 come from padded_offs */
#define PD_VEC 13      /* >0: rows move as this many 16-byte units (host-checked alignment) */
#define PD_SPAN 14     /* vector path: 16-byte units per workgroup (rows touched <= 256) */

#endif
