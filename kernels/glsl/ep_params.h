/* ep_params.h — slot numbers of ep.comp's int64 parameter block (expert parallelism,
 * docs/ep.md), shared by the shader and backends/vulkan/vk_ops_ep.c. */
#ifndef QGMM_GLSL_EP_PARAMS_H
#define QGMM_GLSL_EP_PARAMS_H

#define EP_MODE_ROUTE 0   /* one lane: the stable counting sort of cpu_ep.c */
#define EP_MODE_LAYOUT 1  /* one lane: receive rows, padded offsets, destinations */
#define EP_MODE_PACK 2    /* one lane per wire byte */
#define EP_MODE_ZERO 3    /* dispatch's unpack, first: zero out and out_scales */
#define EP_MODE_SCATTER 4 /* then one lane per wire byte into the receive layout */
#define EP_MODE_COMBINE 5 /* one lane per (token, column) */

#define EP_MODE 0
#define EP_DIR 1       /* pack: 0 dispatch, 1 combine */
#define EP_NRANKS 2
#define EP_TOPK 3
#define EP_ALIGN 4
#define EP_E 5
#define EP_L 6
#define EP_LMAX 7
#define EP_T 8
#define EP_CAP 9
#define EP_MAXRECV 10
#define EP_ERANK 11    /* the plan's tables (qgmm_ep_desc), addresses */
#define EP_ELOCAL 12
#define EP_POS 13
#define EP_SRC 14
#define EP_SCNT 15
#define EP_RCNT 16
#define EP_SROWS 17
#define EP_RROWS 18
#define EP_DST 19
#define EP_OFFS 20
#define EP_STATE 21
#define EP_STATUS 22   /* the context's status word */
#define EP_SCRATCH 23  /* route: (nranks, LMAX + 1) i32 cursors */
#define EP_IDS 24      /* route: expert ids and their strides */
#define EP_IDS0 25
#define EP_IDS1 26
#define EP_X 27        /* pack: rows read (x or y), row stride and element size, dtype, cols, rows */
#define EP_XS0 28
#define EP_XES 29
#define EP_XDT 30
#define EP_D 31
#define EP_XROWS 32
#define EP_S 33        /* scales travelling with x / written beside out: address, row stride, */
#define EP_SS0 34      /* element size, columns (0 = none) */
#define EP_SES 35
#define EP_SCOLS 36
#define EP_W 37        /* weights (T, k): address, strides, dtype (0 = none) */
#define EP_W0 38
#define EP_W1 39
#define EP_WDT 40
#define EP_WIRE 41
#define EP_ROWB 42
#define EP_OUT 43      /* out: address, strides, element size, dtype, rows */
#define EP_O0 44
#define EP_O1 45
#define EP_OES 46
#define EP_ODT 47
#define EP_OROWS 48
#define EP_OSBLK 49    /* out_scales in the M-groups blocked layout, and its bytes */
#define EP_OSBYTES 50
#define EP_OFFSOUT 51
#define EP_N 52        /* lanes */

#endif
