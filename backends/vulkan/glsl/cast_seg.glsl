// cast_seg.glsl — cast.comp's register-resident segment path (CPR.fast 1), included once per
// (SEG_KPS, SEG_SPL) so that the unit loops have constant trip counts and the cached units
// stay in registers (bf16 x). LS consecutive lanes share a segment (whole row, MX block of 32, 1x128
// block); lane lr holds units lr, lr + LS, ... (unit = 8 contiguous bf16 elements, one
// 16-byte load), at most SEG_KPS of them per segment, for SEG_SPL segments spaced `groups`
// apart, so every load instruction of a warp covers whole 32-byte sectors and x is read once.
// The LS lanes combine their amax through shared memory; every lane then computes the scale
// itself (SIMT: no extra cost, no second barrier) and lane 0 stores it.
void SEG_FN()
{
    const int LS = int(CPR.ls), KPS = K_KPS;
    const int tid = int(gl_LocalInvocationID.x);
    const int lr = tid & (LS - 1);
    const int groups = 256 / LS;
    const int nsegt = int(CPR.nsegt), nseg = int(CPR.nseg), O = int(CPR.o);
    const int L = int(CPR.l) > 0 ? int(CPR.l) : int(CPR.r);
    const int U = L / 8;
    const int seg0 = int(wg_linear()) * groups * SEG_SPL + tid / LS;
    const int64_t xe = CPR.xe, xo = CPR.xo, qe = CPR.qe, qo = CPR.qo;
    const uint64_t X = uint64_t(CPR.x), Q = uint64_t(CPR.q);
    const int enc = K_ENC;

    uint64_t xb[SEG_SPL], qb[SEG_SPL];
    int se[SEG_SPL], so[SEG_SPL], sg[SEG_SPL];
    bool sv[SEG_SPL];
    uvec4 c[SEG_KPS * SEG_SPL];
    for (int t = 0; t < SEG_SPL; ++t) {
        const int s = seg0 + t * groups;
        sv[t] = s < nsegt;
        const int row = nseg == 1 ? s : s / nseg;
        sg[t] = s - row * nseg;
        se[t] = int(CPR.e) == 1 ? 0 : row / O;
        so[t] = row - se[t] * O;
        const int64_t rs = int64_t(sg[t]) * L;
        xb[t] = X + uint64_t((se[t] * xe + so[t] * xo + rs) * 2);
        qb[t] = Q + uint64_t(se[t] * qe + so[t] * qo + rs);
        for (int j = 0; j < SEG_KPS; ++j) {
            const int u = lr + LS * j;
            c[t * SEG_KPS + j] = (sv[t] && j < KPS && u < U) ? QV16(xb[t] + uint64_t(u) * 16ul).v : uvec4(0u);
        }
    }
    uint am[SEG_SPL];
    for (int t = 0; t < SEG_SPL; ++t) {
        uvec4 ml = uvec4(0u), mh = uvec4(0u);
        for (int j = 0; j < SEG_KPS; ++j) {
            ml = max(ml, c[t * SEG_KPS + j] & 0x7FFFu);
            mh = max(mh, c[t * SEG_KPS + j] & 0x7FFF0000u);
        }
        mh >>= 16;
        ml = max(ml, mh);
        am[t] = max(max(ml.x, ml.y), max(ml.z, ml.w));
    }
    if (LS > 1) {
        for (int t = 0; t < SEG_SPL; ++t) sh_f[t * 256 + tid] = am[t];
        barrier();
        if (LS == 2) {
            for (int t = 0; t < SEG_SPL; ++t) am[t] = max(am[t], sh_f[t * 256 + (tid ^ 1)]);
        } else {
            for (int s = LS / 2; s > 0; s >>= 1) {
                if (lr < s)
                    for (int t = 0; t < SEG_SPL; ++t)
                        sh_f[t * 256 + tid] = max(sh_f[t * 256 + tid], sh_f[t * 256 + tid + s]);
                barrier();
            }
            for (int t = 0; t < SEG_SPL; ++t) am[t] = sh_f[t * 256 + tid - lr];
        }
    }
    for (int t = 0; t < SEG_SPL; ++t) {
        const uint amax = amax_bf_to_f32(am[t]);
        const uint mult = scale_and_store(amax, se[t], so[t], sg[t], sv[t] && lr == 0);
        const bool fast = quantize_fast_ok(amax, mult);
        for (int j = 0; j < SEG_KPS; ++j) {
            const int u = lr + LS * j;
            if (sv[t] && j < KPS && u < U)
                QV8(qb[t] + uint64_t(u) * 8ul).v = encode_unit(c[t * SEG_KPS + j], mult, fast, enc);
        }
    }
}
