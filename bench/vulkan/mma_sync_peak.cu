// mma_sync_peak.cu — the ceiling of the instruction a Vulkan cooperative-matrix GEMM gets
// on Hopper. Vulkan (VK_KHR_cooperative_matrix, VK_NV_cooperative_matrix2) has no wgmma,
// no TMA and no asynchronous copies; its bf16 MMAs can only become the warp-level
// `mma.sync` of sm_80. This measures, in CUDA on the same GPU, how fast that instruction
// alone can go, so the Vulkan GEMM's gap to torch._grouped_mm (wgmma) can be split into
// "the instruction's ceiling" and "our kernel":
//   reg   every warp issues independent mma.sync.m16n8k16 bf16->f32 on register operands
//         (8 accumulator chains, no memory traffic): the instruction's peak;
//   smem  a 64x32 warp tile fed from shared memory by ldmatrix, 32-deep steps with a
//         barrier each, no global loads: the steady state of a GEMM whose loads were free
//         (the shape of gemm_coopmat.comp's subgroup tiles and of the probe's 128x128x32);
//   gemm  a dense N^3 GEMM with the Vulkan shaders' register staging (k_gemm below).
// Usage: mma_sync_peak [--iters N] [--warps W] [--blocks-per-sm B] [--n N]  --help: this text.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/vulkan/mma_sync_peak.cu
// Timing: CUDA events, median of --iters launches after 3 warm-ups (each launch ~50 ms).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ __forceinline__ void mma16816(float *d, const uint32_t *a, const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *p)
{
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

// 8 independent accumulators: enough chains to cover the MMA latency of one warp
__global__ void k_reg(float *out, int iters, uint32_t seed)
{
    uint32_t a[4], b[2];
    for (int i = 0; i < 4; ++i) a[i] = seed * (threadIdx.x + 3 * i + 1) | 0x3f003f00u;
    for (int i = 0; i < 2; ++i) b[i] = seed * (threadIdx.x + 7 * i + 5) | 0x3c003c00u;
    float acc[8][4] = {};
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < 8; ++c) mma16816(acc[c], a, b);
    }
    float s = 0.f;
    for (int c = 0; c < 8; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
    if (s == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keep the work alive
}

// A tile 128 x 32 and B tile 128 x 32 (k contiguous, rows padded by 16 bytes like the
// Vulkan shaders' staging), 8 warps of 64 x 32 (2 x 4), 32-deep steps: per warp and step
// 2 k16 slices x (4 A ldmatrix.x4 + 2 B ldmatrix.x4 + 16 mma)
constexpr int PITCH = 40;  // bf16 per shared row: 32 + 8 of padding
__global__ void __launch_bounds__(256) k_smem(float *out, int iters, uint32_t seed)
{
    __shared__ __align__(16) uint16_t sa[128 * PITCH], sb[128 * PITCH];
    for (int i = threadIdx.x; i < 128 * PITCH; i += 256) {
        sa[i] = (uint16_t)(0x3f00u | ((seed * (i + 1)) & 0x7f));
        sb[i] = (uint16_t)(0x3c00u | ((seed * (i + 7)) & 0x7f));
    }
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;
    float acc[4][4][4] = {};
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int kk = 0; kk < 32; kk += 16) {
            uint32_t af[4][4], bf[2][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                ldsm_x4(af[i], &sa[(wm + i * 16 + (lane % 16)) * PITCH + kk + (lane / 16) * 8]);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                ldsm_x4(bf[j], &sb[(wn + j * 16 + (lane % 8) + (lane / 16) * 8) * PITCH + kk + ((lane / 8) % 2) * 8]);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) mma16816(acc[i][j], af[i], &bf[j / 2][(j % 2) * 2]);
        }
        __syncthreads();
    }
    float s = 0.f;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) s += acc[i][j][0] + acc[i][j][1] + acc[i][j][2] + acc[i][j][3];
    if (s == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}


// The dense GEMM C[M,N] (f32) = A[M,K] B[N,K]^T with only the staging a Vulkan shader can
// express (no cp.async, no TMA, at most 48 KB of shared memory): BM x BN x 32 tiles, warps
// of 64x32, 16-byte global loads into registers, two shared stages, one barrier per step,
// DEEP register sets of global loads in flight (1 or 2). SWZ: rows of 64 bytes with the
// chunk index XORed by (row / 2) % 4 (conflict-free ldmatrix with no padding, so a
// 256x128x32 pair of stages is exactly 48 KB); else rows padded by 16 bytes, as the
// Vulkan shaders do. GROUP: tiles visited in column strips GROUP tiles tall (L2 reuse);
// 0: row-major over the output, as the Vulkan shaders do. MINB 2: registers capped at 128
// so that two 256-thread blocks fit an SM (a Vulkan shader has no such control). WR: warp
// tile rows, 64 (warps of 64x32) or 32 (32x32: twice the warps for the same tile).
template <int BM, int BN, int BK, int DEEP, bool SWZ, int MINB = 1, int WR = 64>
__global__ void __launch_bounds__(BM / WR * BN / 32 * 32, MINB) k_gemm(const uint4 *__restrict__ A, const uint4 *__restrict__ B,
                                              float *__restrict__ C, int M, int N, int K, int group)
{
    static_assert(!SWZ || BK == 32, "the swizzle is written for 64-byte rows");
    constexpr int NT = BM / WR * BN / 32 * 32, P = SWZ ? 32 : BK + 8;  // bf16 per shared row
    constexpr int CPR = BK / 8;                                          // 16-byte chunks per row
    constexpr int NA = (BM * CPR + NT - 1) / NT, NB = (BN * CPR + NT - 1) / NT;
    __shared__ __align__(128) uint16_t sh[2][(BM + BN) * P];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    int tm = blockIdx.y, tn = blockIdx.x;
    if (group) {  // strips of `group` M-tiles: consecutive blocks share B tiles in L2
        const int id = blockIdx.y * gridDim.x + blockIdx.x, per = group * gridDim.x;
        const int g0 = id / per * group, h = min(group, (int)gridDim.y - g0);
        tm = g0 + (id % per) % h;
        tn = (id % per) / h;
    }
    const int m0 = tm * BM, n0 = tn * BN, kc = K / 8, steps = K / BK;
    const int wm = (warp / (BN / 32)) * WR, wn = (warp % (BN / 32)) * 32;
    uint4 ra[DEEP][NA], rb[DEEP][NB];
    float acc[WR / 16][4][4] = {};
    auto sidx = [&](int row, int chunk) {  // element index of a 16-byte chunk in a stage
        return row * P + (SWZ ? ((chunk ^ ((row >> 1) & 3)) * 8) : chunk * 8);
    };
    auto load = [&](int set, int s) {
#pragma unroll
        for (int i = 0; i < NA; ++i) { const int q = t + i * NT; if (q < BM * CPR) ra[set][i] = A[(size_t)(m0 + q / CPR) * kc + s * CPR + q % CPR]; }
#pragma unroll
        for (int i = 0; i < NB; ++i) { const int q = t + i * NT; if (q < BN * CPR) rb[set][i] = B[(size_t)(n0 + q / CPR) * kc + s * CPR + q % CPR]; }
    };
    auto store = [&](int set, int st) {
#pragma unroll
        for (int i = 0; i < NA; ++i) { const int q = t + i * NT; if (q < BM * CPR) *(uint4 *)&sh[st][sidx(q / CPR, q % CPR)] = ra[set][i]; }
#pragma unroll
        for (int i = 0; i < NB; ++i) { const int q = t + i * NT; if (q < BN * CPR) *(uint4 *)&sh[st][sidx(BM + q / CPR, q % CPR)] = rb[set][i]; }
    };
    auto mma_step = [&](int st) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t af[WR / 16][4], bf[2][4];
#pragma unroll
            for (int i = 0; i < WR / 16; ++i)
                ldsm_x4(af[i], &sh[st][sidx(wm + i * 16 + (lane % 16), kk * 2 + lane / 16)]);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                ldsm_x4(bf[j], &sh[st][sidx(BM + wn + j * 16 + (lane % 8) + (lane / 16) * 8, kk * 2 + (lane / 8) % 2)]);
#pragma unroll
            for (int i = 0; i < WR / 16; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) mma16816(acc[i][j], af[i], &bf[j / 2][(j % 2) * 2]);
        }
    };
    // step s lives in register set s % DEEP until it is stored, one step before its MMAs,
    // to stage (s & 1); its load was issued DEEP steps earlier
    load(0, 0);
    store(0, 0);
#pragma unroll
    for (int j = 1; j <= DEEP; ++j) if (j < steps) load(j % DEEP, j);
    __syncthreads();
    for (int s0 = 0; s0 < steps; s0 += 2 * DEEP) {
#pragma unroll
        for (int d = 0; d < 2 * DEEP; ++d) {
            const int s = s0 + d;
            if (s < steps) {
                if (s + 1 < steps) store((d + 1) % DEEP, (d + 1) & 1);
                if (s + 1 + DEEP < steps) load((d + 1) % DEEP, s + 1 + DEEP);
                mma_step(d & 1);
                __syncthreads();
            }
        }
    }
    // fragment (i, j): rows wm + 16 i + lane / 4 (+8), cols wn + 8 j + 2 (lane % 4) (+1)
#pragma unroll
    for (int i = 0; i < WR / 16; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int r = m0 + wm + i * 16 + lane / 4, c = n0 + wn + j * 8 + (lane % 4) * 2;
            *(float2 *)&C[(size_t)r * N + c] = make_float2(acc[i][j][0], acc[i][j][1]);
            *(float2 *)&C[(size_t)(r + 8) * N + c] = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}

// Warp-specialised with only what a Vulkan shader has: PW producer warps move 128x32 A and
// B slices global -> registers -> an S-stage ring in shared memory (XOR-swizzled, 16 KB a
// stage; three would leave no room for the counters under Vulkan's 48 KB), keeping D steps of loads in flight in their registers; 8 consumer warps (64x32
// each) ldmatrix + mma. No barrier in the loop: stages are handed over through counters
// in shared memory (a release increment, an acquire spin), which Vulkan has as
// atomicAdd / atomicLoad with workgroup scope and shared-storage semantics.
__device__ __forceinline__ void spin_until(volatile int *c, int v)
{
    while (*c < v) { }
    __threadfence_block();  // acquire
}
template <int S, int D, int PW>
__global__ void __launch_bounds__(256 + PW * 32, 1) k_ws(const uint4 *__restrict__ A, const uint4 *__restrict__ B,
                                                         float *__restrict__ C, int M, int N, int K, int group)
{
    constexpr int P = 32, NPT = 256 * 4 / (PW * 32);  // chunks per producer thread (A + B)
    __shared__ __align__(128) uint16_t sh[S][256 * P];
    __shared__ int full[S], empty[S];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    if (t < S) { full[t] = 0; empty[t] = 0; }
    __syncthreads();
    const int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128, kc = K / 8, steps = K / 32;
    (void)group;
    auto sidx = [&](int row, int chunk) { return row * P + ((chunk ^ ((row >> 1) & 3)) * 8); };
    if (warp >= 8) {  // producer
        const int pt = t - 256;
        uint4 r[D][NPT];
        auto load = [&](int set, int s) {
#pragma unroll
            for (int i = 0; i < NPT; ++i) {
                const int q = pt + i * PW * 32, row = q / 4;  // rows 0-127 A, 128-255 B
                r[set][i] = row < 128 ? A[(size_t)(m0 + row) * kc + s * 4 + q % 4]
                                      : B[(size_t)(n0 + row - 128) * kc + s * 4 + q % 4];
            }
        };
#pragma unroll
        for (int d = 0; d < D; ++d) if (d < steps) load(d, d);
        for (int s0 = 0; s0 < steps; s0 += D) {
#pragma unroll
            for (int d = 0; d < D; ++d) {
                const int s = s0 + d;
                if (s < steps) {
                    const int st = s % S, round = s / S;
                    if (lane == 0) spin_until(&empty[st], round * 8);
                    __syncwarp();
#pragma unroll
                    for (int i = 0; i < NPT; ++i) {
                        const int q = pt + i * PW * 32;
                        *(uint4 *)&sh[st][sidx(q / 4, q % 4)] = r[d][i];
                    }
                    __syncwarp();
                    if (lane == 0) { __threadfence_block(); atomicAdd(&full[st], 1); }  // release
                    if (s + D < steps) load(d, s + D);
                }
            }
        }
        return;
    }
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;
    float acc[4][4][4] = {};
    for (int s = 0; s < steps; ++s) {
        const int st = s % S, round = s / S;
        if (lane == 0) spin_until(&full[st], (round + 1) * PW);
        __syncwarp();
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            uint32_t af[4][4], bf[2][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                ldsm_x4(af[i], &sh[st][sidx(wm + i * 16 + (lane % 16), kk * 2 + lane / 16)]);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                ldsm_x4(bf[j], &sh[st][sidx(128 + wn + j * 16 + (lane % 8) + (lane / 16) * 8, kk * 2 + (lane / 8) % 2)]);
            if (kk == 1) {  // fragments of the stage are in registers: hand it back
                __syncwarp();
                if (lane == 0) { __threadfence_block(); atomicAdd(&empty[st], 1); }
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) mma16816(acc[i][j], af[i], &bf[j / 2][(j % 2) * 2]);
        }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int r = m0 + wm + i * 16 + lane / 4, c = n0 + wn + j * 8 + (lane % 4) * 2;
            *(float2 *)&C[(size_t)r * N + c] = make_float2(acc[i][j][0], acc[i][j][1]);
            *(float2 *)&C[(size_t)(r + 8) * N + c] = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}

typedef void (*gemm_fn)(const uint4 *, const uint4 *, float *, int, int, int, int);
struct gemm_variant { const char *name; gemm_fn fn; int bm, bn, bk, threads, group, blocks_per_sm; };

// Median ms of `iters` event-timed launches after 3 warm-ups; launch(r) enqueues run r.
template <class F>
static double time_median(int iters, cudaEvent_t e0, cudaEvent_t e1, F launch)
{
    std::vector<float> ms;
    for (int r = 0; r < iters + 3; ++r) {
        CK(cudaEventRecord(e0));
        launch(r);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        if (r >= 3) ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

int main(int argc, char **argv)
{
    int iters = 15, warps = 8, bps = 0, gemm_n = 8192;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: mma_sync_peak [--iters N] [--warps W] [--blocks-per-sm B] [--n N]\n"
                   "  the peak of mma.sync.m16n8k16 bf16->f32 on this GPU: register operands (reg),\n"
                   "  and a 128x128x32 tile of 8 warps fed from shared memory by ldmatrix (smem);\n"
                   "  --warps: warps per block of 'reg' (default 8); --blocks-per-sm: default 1 and 2\n"
                   "  then a dense N^3 bf16 GEMM (default 8192, a multiple of 128) staged the way the\n"
                   "  Vulkan shaders stage theirs, with 1 and 2 register sets of loads in flight\n");
            return 0;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warps") && i + 1 < argc) warps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--blocks-per-sm") && i + 1 < argc) bps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) gemm_n = atoi(argv[++i]);
        else { fprintf(stderr, "unknown argument %s (--help)\n", argv[i]); return 2; }
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int clk = 0;
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    printf("device: %s, %d SMs, max SM clock %d MHz\n", prop.name, prop.multiProcessorCount, clk / 1000);
    float *out;
    CK(cudaMalloc(&out, 1 << 24));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int sms = prop.multiProcessorCount;
    printf("| kernel | warps/block | blocks/SM | median ms | TFLOP/s |\n|---|---|---|---|---|\n");
    for (int kind = 0; kind < 2; ++kind) {
        for (int b = 1; b <= 2; ++b) {
            if (bps && b != bps) continue;
            const int w = kind == 0 ? warps : 8;
            const int blocks = sms * b;
            const int n = kind == 0 ? 20000 : 4000;  // inner iterations per launch
            // FLOPs per launch: reg: 8 mma per iteration per warp; smem: 32 per step per warp
            const double flop = (double)blocks * w * n * (kind == 0 ? 8 : 32) * 2.0 * 16 * 8 * 16;
            const double t = time_median(iters, e0, e1, [&](int r) {
                if (kind == 0) k_reg<<<blocks, w * 32>>>(out, n, 0x9E3779B9u + r);
                else k_smem<<<blocks, 256>>>(out, n, 0x9E3779B9u + r);
            });
            printf("| %s | %d | %d | %.3f | %.1f |\n", kind == 0 ? "reg" : "smem", w, b, t, flop / t / 1e9);
        }
    }
    // the dense GEMM, verified on sampled outputs against a double-precision product
    const int D = gemm_n;
    std::vector<uint16_t> ha((size_t)D * D), hb((size_t)D * D);
    uint64_t x = 0x243F6A8885A308D3ull;
    for (auto *v : {&ha, &hb})
        for (auto &e : *v) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            const float f = (float)((x >> 40) & 0xFFFF) / 32768.f - 1.f;  // [-1, 1)
            uint32_t u;
            memcpy(&u, &f, 4);
            e = (uint16_t)(u >> 16);
        }
    uint4 *da, *db;
    float *dc;
    CK(cudaMalloc(&da, (size_t)D * D * 2));
    CK(cudaMalloc(&db, (size_t)D * D * 2));
    CK(cudaMalloc(&dc, (size_t)D * D * 4));
    CK(cudaMemcpy(da, ha.data(), (size_t)D * D * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), (size_t)D * D * 2, cudaMemcpyHostToDevice));
    auto bf = [](uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return (double)f; };
    printf("\ndense %d^3 bf16 -> f32, register-staged tiles (what a Vulkan shader can express)\n", D);
    printf("| kernel | tile | threads | L2 strips | blocks/SM | median ms | TFLOP/s | max err / bound |\n"
           "|---|---|---|---|---|---|---|---|\n");
    // blocks_per_sm 1: held there by an unused dynamic shared allocation, as the Vulkan
    // driver's 162-189 registers hold its 256-invocation GEMMs; 0: as compiled
    const gemm_variant vs[] = {
        {"pad deep1", k_gemm<128, 128, 32, 1, false>, 128, 128, 32, 256, 0, 1},
        {"pad deep2", k_gemm<128, 128, 32, 2, false>, 128, 128, 32, 256, 0, 1},
        {"pad deep2", k_gemm<128, 128, 32, 2, false>, 128, 128, 32, 256, 8, 1},
        {"pad deep1 minb2", k_gemm<128, 128, 32, 1, false, 2>, 128, 128, 32, 256, 0, 0},
        {"pad deep1 minb2", k_gemm<128, 128, 32, 1, false, 2>, 128, 128, 32, 256, 8, 0},
        {"pad deep2 minb2", k_gemm<128, 128, 32, 2, false, 2>, 128, 128, 32, 256, 0, 0},
        {"pad deep2 minb2", k_gemm<128, 128, 32, 2, false, 2>, 128, 128, 32, 256, 8, 0},
        {"swz deep2", k_gemm<256, 128, 32, 2, true>, 256, 128, 32, 512, 0, 0},
        {"swz deep2", k_gemm<256, 128, 32, 2, true>, 256, 128, 32, 512, 8, 0},
        {"swz deep2", k_gemm<128, 256, 32, 2, true>, 128, 256, 32, 512, 0, 0},
        {"swz deep2", k_gemm<128, 256, 32, 2, true>, 128, 256, 32, 512, 8, 0},
        // what a coopMatLoad can read (a row pitch, no swizzle): 16-deep steps, 48-byte rows
        {"pad deep2", k_gemm<256, 128, 16, 2, false>, 256, 128, 16, 512, 0, 0},
        {"pad deep2", k_gemm<256, 128, 16, 2, false>, 256, 128, 16, 512, 8, 0},
        {"pad deep4", k_gemm<256, 128, 16, 4, false>, 256, 128, 16, 512, 8, 0},
        {"pad deep2", k_gemm<128, 256, 16, 2, false>, 128, 256, 16, 512, 8, 0},
        {"pad deep4 minb2", k_gemm<128, 128, 16, 4, false, 2>, 128, 128, 16, 256, 8, 0},
        // 16 warps of 32x32 on a 128x128 tile: the warps of two 256-thread blocks in one
        // workgroup, which a Vulkan driver must fit in 128 registers
        {"pad deep1 w32", k_gemm<128, 128, 32, 1, false, 1, 32>, 128, 128, 32, 512, 0, 0},
        {"pad deep2 w32", k_gemm<128, 128, 32, 2, false, 1, 32>, 128, 128, 32, 512, 0, 0},
        {"pad deep2 w32", k_gemm<128, 128, 32, 2, false, 1, 32>, 128, 128, 32, 512, 8, 0},
        {"pad deep2 w32", k_gemm<128, 256, 16, 2, false, 1, 32>, 128, 256, 16, 1024, 8, 0},
        // 128-thread workgroups (4 warps of 64x32): several resident per SM at the
        // registers the compiler picks, each with its own barrier
        {"pad deep1", k_gemm<128, 64, 32, 1, false>, 128, 64, 32, 128, 0, 0},
        {"pad deep2", k_gemm<128, 64, 32, 2, false>, 128, 64, 32, 128, 0, 0},
        {"pad deep2", k_gemm<128, 64, 32, 2, false>, 128, 64, 32, 128, 8, 0},
        {"pad deep2", k_gemm<64, 128, 32, 2, false>, 64, 128, 32, 128, 8, 0},
        {"ws S2 D2 PW8", k_ws<2, 2, 8>, 128, 128, 32, 512, 0, 0},
    };
    const int pad = 120 * 1024;
    for (const gemm_variant &v : vs) {
        if (D % v.bm || D % v.bn) continue;
        const int dyn = v.blocks_per_sm == 1 ? pad : 0;
        CK(cudaFuncSetAttribute((const void *)v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
        CK(cudaMemset(dc, 0xFF, (size_t)D * D * 4));  // NaN poison
        const double t = time_median(iters, e0, e1, [&](int) {
            v.fn<<<dim3(D / v.bn, D / v.bm), v.threads, dyn>>>(da, db, dc, D, D, D, v.group);
        });
        double worst = 0;
        for (int i = 0; i < 256; ++i) {
            const int r = (int)((i * 2654435761u) % D), c = (int)((i * 40503u + 17) % D);
            double ref = 0, mag = 0;
            for (int k = 0; k < D; ++k) {
                const double p = bf(ha[(size_t)r * D + k]) * bf(hb[(size_t)c * D + k]);
                ref += p;
                mag += fabs(p);
            }
            float got;
            CK(cudaMemcpy(&got, dc + (size_t)r * D + c, 4, cudaMemcpyDeviceToHost));
            const double err = fabs((double)got - ref) / (mag * D * 6e-8 + 1e-30);  // f32 sum bound
            worst = got != got ? 1e30 : std::max(worst, err);
        }
        int occ = 0;
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, (const void *)v.fn));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (const void *)v.fn, v.threads, dyn));
        printf("| %s (%d regs) | %dx%dx%d | %d | %d | %d | %.3f | %.1f | %.3f%s |\n", v.name, fa.numRegs, v.bm, v.bn, v.bk,
               v.threads, v.group, occ, t, 2.0 * D * D * D / t / 1e9, worst, worst > 1 ? " FAIL" : "");
    }
    return 0;
}
