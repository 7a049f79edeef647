/*
 * vk_internal.h — state shared by the files of the Vulkan backend: the dlopen'ed loader's
 * function table, the per-context device/queue/submission state, buffers and pipelines.
 *
 * Execution model (why it is this simple): one queue per context; ops append compute
 * dispatches to a recording command buffer with a full memory barrier after each, so
 * every op sees the previous one's writes in enqueue order; the buffer is submitted
 * (without waiting) every VK_AUTOFLUSH commands and at synchronize/download/event reads.
 * Shaders address tensors through buffer device addresses read from a per-op int64
 * parameter block in a host-visible ring, so there are no descriptor sets at all.
 */
#ifndef QGMM_VK_INTERNAL_H
#define QGMM_VK_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "qgmm_backend.h"
#include "vk_grid.h"

/* ---------------------------------------------------------------- loader functions */
#define VK_FUNCS(X)                                                                       \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)  \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)                     \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties)    \
    X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkDestroyDevice)          \
    X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                              \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory)                  \
    X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory) X(vkGetBufferDeviceAddress)     \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)            \
    X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkResetCommandBuffer)                 \
    X(vkQueueSubmit) X(vkQueueWaitIdle) X(vkCreateFence) X(vkDestroyFence)                \
    X(vkWaitForFences) X(vkResetFences) X(vkCreateShaderModule) X(vkDestroyShaderModule)  \
    X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) X(vkCreateComputePipelines)      \
    X(vkDestroyPipeline) X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatch)     \
    X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkCreateQueryPool)    \
    X(vkDestroyQueryPool) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp)                   \
    X(vkGetQueryPoolResults) X(vkDeviceWaitIdle)

typedef struct vk_api {
    void *lib;
    PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
    PFN_vkCreateInstance CreateInstance;
    VkInstance instance;
#define X(n) PFN_##n n;
    VK_FUNCS(X)
#undef X
    /* physical devices that meet the backend's needs, best first */
    int ndev;
    VkPhysicalDevice devs[16];
} vk_api;

extern vk_api g_vk;

/* ---------------------------------------------------------------- pipelines */
enum vk_pipe {
    VKP_FILL,
    VKP_OFFS_PREP,
    VKP_CAST_E4M3FN, /* cast.comp per fp8 format (order of QGMM_F8E4M3FN..QGMM_F8E5M2) */
    VKP_CAST_E4M3FNUZ,
    VKP_CAST_E5M2,
    VKP_CAST_ROWS_E4M3FN, /* cast_rows.comp per fp8 format: the low-register segment paths */
    VKP_CAST_ROWS_E4M3FNUZ,
    VKP_CAST_ROWS_E5M2,
    VKP_CAST_2D_E4M3FN, /* cast_2d.comp per fp8 format: MX dim1 and 128x128 tiles, low-register */
    VKP_CAST_2D_E4M3FNUZ,
    VKP_CAST_2D_E5M2,
    VKP_CAST_COLS_E4M3FN, /* cast_cols.comp per fp8 format: rowwise scales along a strided dim */
    VKP_CAST_COLS_E4M3FNUZ,
    VKP_CAST_COLS_E5M2,
    VKP_CAST_JROWS_E4M3FN, /* cast_jrows.comp per fp8 format: jagged rowwise along the contiguous dim */
    VKP_CAST_JROWS_E4M3FNUZ,
    VKP_CAST_JROWS_E5M2,
    VKP_CAST_ROWS_F32_E4M3FN, /* cast_rows.comp for f32 x (QG_XF32), per fp8 format */
    VKP_CAST_ROWS_F32_E4M3FNUZ,
    VKP_CAST_ROWS_F32_E5M2,
    VKP_CAST_2D_F32_E4M3FN, /* cast_2d.comp for f32 x (QG_XF32), per fp8 format */
    VKP_CAST_2D_F32_E4M3FNUZ,
    VKP_CAST_2D_F32_E5M2,
    VKP_CAST_COLS_F32_E4M3FN, /* cast_cols.comp for f32 x (QG_XF32), per fp8 format */
    VKP_CAST_COLS_F32_E4M3FNUZ,
    VKP_CAST_COLS_F32_E5M2,
    VKP_CAST_JROWS_F32_E4M3FN, /* cast_jrows.comp for f32 x (QG_XF32), per fp8 format */
    VKP_CAST_JROWS_F32_E4M3FNUZ,
    VKP_CAST_JROWS_F32_E5M2,
    VKP_DEQUANT,
    VKP_BLOCKED,
    VKP_PAD,
    VKP_GEMM,
    VKP_GEMM_FP8,
    VKP_GEMM_COOP_FP8,      /* gemm_coopmat.comp on VK_NV_cooperative_matrix (fp8 -> f16), rowwise */
    VKP_GEMM_COOP_FP8_BLK,  /* the same, blockwise / MX (per-scale-block promotion) */
    VKP_GEMM_COOP_FP8_KHR,  /* the two above, rewritten to VK_KHR_cooperative_matrix */
    VKP_GEMM_COOP_FP8_BLK_KHR,
    VKP_GEMM_COOP_BF16_KHR, /* bf16 operands, KHR matrices with bfloat16 components */
    VKP_GEMM_COOP_BF16_WG_KHR, /* the same on workgroup-scope matrices, two steps of loads in flight */
    VKP_GEMM_COOP_FP8_WG_KHR,  /* FP8 rowwise (fp8 -> f16) on workgroup-scope matrices, the same way */
    VKP_GEMM_ZERO,             /* gemm_zero.comp: the K-grouped GEMM's empty groups */
    VKP_COPY,                  /* copy.comp: qgmm_buffer_copy of 16-byte aligned ranges */
    VKP_EP,                    /* ep.comp: the expert-parallel routing ops (vk_ops_ep.c) */
    VKP_COUNT
};
typedef struct vk_spirv { const char *name; const uint32_t *code; size_t bytes; } vk_spirv;
extern const vk_spirv g_vk_spirv[VKP_COUNT];

/* ---------------------------------------------------------------- memory */
typedef struct vk_mem {
    VkBuffer buf;
    VkDeviceMemory mem;     /* VK_NULL_HANDLE for wrapped buffers */
    VkDeviceAddress addr;
    void *map;              /* host-visible allocations only */
    size_t size;
} vk_mem;

#define VK_NCMD 8
#define VK_AUTOFLUSH 64
#define VK_PARAM_RING (4u << 20)
#define VK_PARAM_SLOT 512
#define VK_SCRATCH_BYTES (4u << 20)
#define VK_STAGING_BYTES (32u << 20)

#define VK_MAX_SPEC_CONST 8
#define VK_MAX_SPEC_PIPES 64
typedef struct vk_spec_pipe {
    int pipe, nspec;
    int32_t spec[VK_MAX_SPEC_CONST];
    VkPipeline pl;
} vk_spec_pipe;

typedef struct vk_cmd {
    VkCommandBuffer cb;
    VkFence fence;
    int state; /* 0 idle, 1 recording, 2 submitted */
} vk_cmd;

/* ---------------------------------------------------------------- tuning (vk_tuning.c) */
/* Read once at context creation from the environment; each field names its variable. Every
 * setting writes the same bytes: only paths and layouts change. */
enum { VK_WANT_AUTO, VK_WANT_TILED, VK_WANT_COOPMAT, VK_WANT_COOPMAT_NV }; /* gemm_path */
enum { VK_LANES_GENERIC, VK_LANES_DEFAULT, VK_LANES_V1 };                 /* cast_lanes */
enum { VK_SPEC_NONE, VK_SPEC_DEFAULT, VK_SPEC_ALL };                      /* cast_spec */
enum { VK_ENC_B, VK_ENC_A, VK_ENC_BINADE };    /* cast_enc: the shaders' SC_ENC / cast_params.h enc codes */
typedef struct vk_tuning {
    int gemm_path;  /* QGMM_VULKAN_GEMM_PATH: auto | tiled | coopmat | coopmat-nv */
    int gemm_wg;    /* QGMM_VULKAN_GEMM_WG: 0 keeps BF16 / FP8 rowwise on subgroup-scope matrices */
    int cast_lanes; /* QGMM_VULKAN_CAST_LANES: cast.comp's lane layouts, generic | default | v1 */
    int cast_spec;  /* QGMM_VULKAN_CAST_SPEC: cast.comp paths with their own pipeline, none | default | all */
    int cast_enc;   /* QGMM_VULKAN_CAST_ENC: the fast fp8 encoder, b | a | binade */
    int rows;       /* QGMM_VULKAN_CAST_ROWS: 0 keeps row/1x128/MX dim0 casts on cast.comp */
    int rows_kps;   /* QGMM_VULKAN_CAST_ROWS_KPS: units of 8 per lane, 1-8 (0: 8 for bf16, 4 for f32) */
    int rows_spl;   /* QGMM_VULKAN_CAST_ROWS_SPL: segments per lane group, 1, 2 or 4 */
    int twod;       /* QGMM_VULKAN_CAST_2D: 0 keeps MX dim1 / 128x128 on cast.comp */
    int twod_rpl;   /* QGMM_VULKAN_CAST_2D_RPL: MX dim1 rows per lane, 8 or 16 */
    int twod_bpw;   /* QGMM_VULKAN_CAST_2D_BPW: MX dim1 32-row blocks per workgroup, 1, 2 or 4 */
    int cols;       /* QGMM_VULKAN_CAST_COLS: 0 keeps strided-reduce rowwise casts on cast.comp */
    int cols_lc;    /* QGMM_VULKAN_CAST_COLS_LC: lanes across a workgroup's columns, 1-16 */
    int cols_kpl;   /* QGMM_VULKAN_CAST_COLS_KPL: rows per lane, 8 or 16 (0: by shape) */
    int jrows;      /* QGMM_VULKAN_CAST_JROWS: 0 keeps jagged rowwise casts on cast.comp */
    int jrows_ls;   /* QGMM_VULKAN_CAST_JROWS_LS: lanes per segment, up to the subgroup (0: by width) */
    int jrows_kps;  /* QGMM_VULKAN_CAST_JROWS_KPS: units per lane in registers, 1-8 */
    int jrows_wgs;  /* QGMM_VULKAN_CAST_JROWS_WGS: persistent workgroups, at most */
    int longrows;   /* QGMM_VULKAN_CAST_LONGROWS: 0 keeps bf16 rows of 32769-65536 on cast.comp */
    int dispatch_x; /* QGMM_VULKAN_DISPATCH_X: workgroups per row of a dispatch grid, 1-65535 */
    int pipestats;  /* QGMM_VK_PIPELINE_STATS: print each pipeline's driver statistics */
    int dump_table; /* QGMM_VK_DUMP_TABLE: print the last group table at synchronize */
} vk_tuning;
/* Fills t from the environment; an unknown value is an error naming the variable. */
qgmm_status vk_tuning_read(qgmm_context *api, uint32_t subgroup_size, vk_tuning *t);
/* "tuning: VAR=value ..." for the knobs off their defaults, "tuning: defaults" otherwise. */
void vk_tuning_describe(const vk_tuning *t, char *out, size_t cap);

typedef struct vk_ctx {
    qgmm_context *api;
    vk_tuning tune;
    VkPhysicalDevice pd;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    VkPhysicalDeviceProperties props;
    uint32_t subgroup_size;
    /* cast_rows.comp may run: compute-stage subgroups of at least 4 with basic, arithmetic
     * and shuffle operations (vk_device.c) */
    int cast_rows_ok;
    int has_f64, ts_ok;
    int pipestats; /* tune.pipestats, on a device that can report the statistics */
    /* GEMM path (vk_device.c, coop_detect): VK_GEMM_COOP_KHR when the device has
     * VK_KHR_cooperative_matrix with a 16x16x16 f16 x f16 -> f32 subgroup shape, else
     * VK_GEMM_COOP_NV with the NV extension's, else VK_GEMM_TILED; coop_bf16 when it also
     * has VK_KHR_shader_bfloat16 and a 16x16x16 bf16 x bf16 -> f32 shape (BF16 recipe) */
    int gemm_path, coop_bf16;
    /* coop_wg: BF16 on workgroup-scope matrices (VK_NV_cooperative_matrix2, vk_coop.c wg_ok);
     * coop_wg_fp8: FP8 rowwise on them (f16 components, KHR path); wg_why / wg_fp8_why: why
     * not ("" when on) */
    int coop_wg, coop_wg_fp8;
    char wg_why[128], wg_fp8_why[128];
    char coop_why[128]; /* why the cooperative-matrix path is off ("" when on) */
    char bf16_why[128]; /* why BF16 has no cooperative-matrix path ("" when it has) */
    uint64_t ts_mask;
    VkPhysicalDeviceMemoryProperties memprops;

    VkCommandPool pool;
    vk_cmd cmds[VK_NCMD];
    int cur;           /* recording slot or -1 */
    int next;          /* next slot to record into */
    int recorded;      /* commands in the recording buffer */

    VkPipelineLayout layout;
    VkPipeline pipes[VKP_COUNT];
    vk_spec_pipe spec_pipes[VK_MAX_SPEC_PIPES]; /* specialized pipelines (vk_pipeline_spec) */
    int nspec_pipes;

    vk_mem params;     /* host-visible ring of per-dispatch parameter blocks */
    size_t param_cursor;
    vk_mem scratch;    /* device group tables */
    vk_mem status;     /* device status word (device-local) */
    vk_mem readback;   /* host-visible: status word copy */
    vk_mem staging[2]; /* host-visible transfers: one chunk in flight while the host copies the other */
    char describe[2048];
} vk_ctx;

enum { VK_GEMM_TILED = 0, VK_GEMM_COOP_NV = 1, VK_GEMM_COOP_KHR = 2 };
/* shared memory gemm_coopmat.comp declares: 4 tiles of 640 x 16 B + 2 x 2 x 128 floats */
#define VK_COOP_SHARED_BYTES (4u * 640u * 16u + 4u * 128u * 4u)
/* the BF16 builds use the operand tiles only (the scale arrays are compiled out) */
#define VK_COOP_BF16_SHARED_BYTES (4u * 640u * 16u)

typedef struct vk_buf { vk_mem m; int owned; } vk_buf;

static inline vk_ctx *vk_of(const qgmm_context *ctx) { return (vk_ctx *)qgmm_context_impl(ctx); }
static inline vk_buf *vkbuf_of(const qgmm_buffer *b) { return (vk_buf *)qgmm_buffer_impl(b); }
/* Device address of a tensor's first element (0 for an absent tensor). */
uint64_t vk_tensor_addr(const qgmm_tensor *t);
uint64_t vk_ref_addr(const qgmm_ref *r); /* 0 where absent */

/* vk_coop.c: choose gemm_path / coop_bf16 (QGMM_VULKAN_GEMM_PATH honoured), then add what
 * the chosen path needs to vkCreateDevice's feature chain (hung off f12) and extension list.
 * The feature structs live in opaque storage because the system headers may predate them. */
typedef struct vk_coop_features {
    uint64_t nv[4], khr[4], bf16[4]; /* VkPhysicalDeviceCooperativeMatrixFeatures{NV,KHR}, bfloat16 */
    uint64_t cm2[6];                 /* VkPhysicalDeviceCooperativeMatrix2FeaturesNV */
    const char *ext[3];
    uint32_t next;
} vk_coop_features;
qgmm_status vk_coop_choose(vk_ctx *c, const VkPhysicalDeviceSubgroupProperties *sg);
/* 1 when the physical device lists the extension */
int vk_has_ext(VkPhysicalDevice pd, const char *name);
void vk_coop_enable(vk_ctx *c, vk_coop_features *e, VkPhysicalDeviceVulkan12Features *f12);

/* vk_ops_ep.c: the ep_* slots of qgmm_backend.h */
qgmm_status vk_ep_route(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *expert_ids);
qgmm_status vk_ep_layout(qgmm_context *ctx, const qgmm_ep_desc *d);
qgmm_status vk_ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                       const qgmm_tensor *x_scales, const qgmm_tensor *weights, const qgmm_tensor *wire,
                       int64_t row_bytes);
qgmm_status vk_ep_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *wire,
                         int64_t row_bytes, const qgmm_tensor *weights, const qgmm_tensor *out,
                         const qgmm_tensor *out_scales, int scales_blocked, const qgmm_tensor *offs_out);

/* vk_pipestats.c */
int vk_pipestats_wanted(vk_ctx *c);
void vk_pipestats_print(vk_ctx *c, VkPipeline pl, const char *name);

/* vk_device.c */
qgmm_status vk_loader_init(char *reason, size_t cap);
qgmm_status vk_ctx_create(qgmm_context *api, int device, vk_ctx **out);
void vk_ctx_destroy(vk_ctx *c);
/* host_visible: 0 device-local, 1 host-visible (cached preferred), 2 host-visible
 * (device-local preferred) */
qgmm_status vk_mem_create(vk_ctx *c, size_t bytes, int host_visible, vk_mem *m);
void vk_mem_destroy(vk_ctx *c, vk_mem *m);

/* vk_stream.c */
VkCommandBuffer vk_begin(vk_ctx *c);           /* the recording command buffer */
void vk_barrier(vk_ctx *c, VkCommandBuffer cb);
qgmm_status vk_flush(vk_ctx *c);                /* submit without waiting */
qgmm_status vk_wait_all(vk_ctx *c);             /* submit and wait for everything */
/* Waits for the submission of ring slot i (c->cur right after vk_begin, then submitted) and
 * all work before it; nothing when it has already been waited for. */
qgmm_status vk_wait_slot(vk_ctx *c, int i);
qgmm_status vk_pipeline(vk_ctx *c, int pipe, VkPipeline *out);
/* Enqueues pipe over `groups` workgroups (folded into x/y) with parameter block p[n]. */
qgmm_status vk_dispatch(vk_ctx *c, int pipe, const int64_t *p, int n, int64_t groups);
qgmm_status vk_pipeline_spec(vk_ctx *c, int pipe, const int32_t *spec, int nspec, VkPipeline *out);
qgmm_status vk_dispatch_spec(vk_ctx *c, int pipe, const int32_t *spec, int nspec, const int64_t *p, int n,
                             int64_t groups);
/* the same; barrier_after 0 leaves out the full barrier after the dispatch, for a dispatch
 * whose successor touches none of what it writes (the two halves of the BF16 GEMM) */
qgmm_status vk_dispatch_spec_ex(vk_ctx *c, int pipe, const int32_t *spec, int nspec, const int64_t *p, int n,
                                int64_t groups, int barrier_after);
qgmm_status vk_fill(vk_ctx *c, uint64_t addr, int64_t bytes, uint8_t value);
/* Runs offs_prep.comp for offs (offs_params.h says what each argument means; cap -1: none);
 * the main kernel then reads the table at scratch.addr. */
qgmm_status vk_offs_prep(vk_ctx *c, const qgmm_tensor *offs, int64_t extent, int64_t multiple,
                         int64_t align, int64_t tile, int64_t div, uint64_t out0, uint64_t out1,
                         uint64_t padoffs, int64_t cap);

/* ops (vk_ops_cast.c, vk_ops_layout.c, vk_ops_gemm.c) */
struct qg_cast_params;
void vk_cast_params_operands(struct qg_cast_params *p, const qgmm_cast_problem *pr);
/* every cast and dequantize (vk_ops_cast.c); the grouped MXFP8 layouts (vk_ops_mx_groups.c) */
qgmm_status vk_cast(qgmm_context *ctx, const qgmm_cast_problem *pr);
qgmm_status vk_quantize_mxfp8_grouped(vk_ctx *c, const qgmm_cast_problem *pr);
qgmm_status vk_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant v, const qgmm_tensor *in,
                                 const qgmm_tensor *offs, const qgmm_tensor *out,
                                 const qgmm_tensor *group_starts);
qgmm_status vk_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                   const qgmm_tensor *in, const qgmm_tensor *offs,
                                   const qgmm_tensor *out);
qgmm_status vk_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                const qgmm_tensor *offs, const qgmm_tensor *out,
                                const qgmm_tensor *padded_start, const qgmm_tensor *padded_offs);
qgmm_status vk_unpad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x_padded,
                                  const qgmm_tensor *offs, const qgmm_tensor *out);
qgmm_status vk_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                             const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids);
qgmm_status vk_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *p);

#endif /* QGMM_VK_INTERNAL_H */
