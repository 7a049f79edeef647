/*
 * hip_emu.cpp — the runtime of the host emulation (hip_emu.h): the running launch, the
 * lane exchange behind the 64-wide xor shuffle and the two MFMA models, and hg_emu_run,
 * which runs a kernel body one 256-work-item workgroup at a time, each work-item a pthread.
 */
#include "hip_emu.h"

#include "qgmm_fp8_codec.h"

#include <vector>

hg_emu_launch g_hg_emu;
thread_local int g_hg_emu_tid;

/* ---------------------------------------------------------------- lane models */
static uint64_t g_xa[16][64], g_xb[16][64];
static float g_xs[16][64];

static void wave_sync(void) { pthread_barrier_wait(&g_hg_emu.wave[g_hg_emu_tid / 64]); }

float hg_emu_shfl_xor(float v, int mask)
{
    const int w = g_hg_emu_tid / 64, l = g_hg_emu_tid % 64;
    g_xs[w][l] = v;
    wave_sync();
    const float r = g_xs[w][l ^ mask];
    wave_sync();
    return r;
}

/* D[i][j] += sum_k A[i][k] B[k][j]; A[i][k] in lane i + 32*(k/KH) element k%KH, B[k][j] in
 * lane j + 32*(k/KH); D[i][j] in lane j + 32*((i/4)%2), register (i%4) + 4*(i/8). */
template <int KH, typename Dec>
static hg_emu_f32x16 mfma_model(uint64_t a, uint64_t b, hg_emu_f32x16 acc, Dec dec)
{
    const int w = g_hg_emu_tid / 64, l = g_hg_emu_tid % 64;
    g_xa[w][l] = a;
    g_xb[w][l] = b;
    wave_sync();
    hg_emu_f32x16 d = acc;
    const int j = l % 32;
    for (int r = 0; r < 16; ++r) {
        const int i = 8 * (r / 4) + 4 * (l / 32) + (r % 4);
        float s = acc[r];
        for (int k = 0; k < 2 * KH; ++k)
            s += dec(g_xa[w][i + 32 * (k / KH)], k % KH) * dec(g_xb[w][j + 32 * (k / KH)], k % KH);
        d[r] = s;
    }
    wave_sync();
    return d;
}

hg_emu_f32x16 hg_emu_mfma_bf16(hg_emu_i16x4 a, hg_emu_i16x4 b, hg_emu_f32x16 acc)
{
    uint64_t ua, ub;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    return mfma_model<4>(ua, ub, acc, [](uint64_t v, int e) {
        return qgmm_bf16_to_f32((uint16_t)(v >> (16 * e)));
    });
}

hg_emu_f32x16 hg_emu_mfma_fp8(long a, long b, hg_emu_f32x16 acc)
{
    return mfma_model<8>((uint64_t)a, (uint64_t)b, acc, [](uint64_t v, int e) {
        return qgmm_fp8_to_f32((uint8_t)(v >> (8 * e)), QGMM_FMT_E4M3FNUZ);
    });
}

/* ---------------------------------------------------------------- the emulated launch */
struct emu_arg { void (*body)(void *); void *ctx; int tid; };

static void *emu_thread(void *v)
{
    const emu_arg *a = (const emu_arg *)v;
    g_hg_emu_tid = a->tid;
    a->body(a->ctx);
    return NULL;
}

void hg_emu_run3(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, void (*body)(void *), void *ctx)
{
    const int n = (int)(bx * by);
    g_hg_emu.nblocks = (int)gx;
    g_hg_emu.nby = (int)gy;
    g_hg_emu.nbz = (int)gz;
    g_hg_emu.ntx = (int)bx;
    g_hg_emu.nthreads = n;
    pthread_barrier_init(&g_hg_emu.block, NULL, (unsigned)n);
    for (int w = 0; w < (n + 63) / 64; ++w)
        pthread_barrier_init(&g_hg_emu.wave[w], NULL, (unsigned)(n - 64 * w < 64 ? n - 64 * w : 64));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    std::vector<pthread_t> th((size_t)n);
    std::vector<emu_arg> args((size_t)n);
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
                g_hg_emu.bid = (int)x;
                g_hg_emu.bid_y = (int)y;
                g_hg_emu.bid_z = (int)z;
                for (int t = 0; t < n; ++t) {
                    args[(size_t)t] = {body, ctx, t};
                    pthread_create(&th[(size_t)t], &attr, emu_thread, &args[(size_t)t]);
                }
                for (int t = 0; t < n; ++t) pthread_join(th[(size_t)t], NULL);
            }
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&g_hg_emu.block);
    for (int w = 0; w < (n + 63) / 64; ++w) pthread_barrier_destroy(&g_hg_emu.wave[w]);
}

void hg_emu_run(int nblocks, void (*body)(void *), void *ctx) { hg_emu_run3((unsigned)nblocks, 1, 1, 256, 1, body, ctx); }
