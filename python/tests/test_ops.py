"""Every op of api/qgmm.h through the package (NumPy arrays wrapped in place on the cpu
backend) against the same op through the C API directly (support.CRef): byte-identical
outputs. A few semantic checks make sure the compared outputs are not trivially equal."""
import ctypes
import unittest

import numpy as np

from support import CRef, bf16, bf16_to_f32, f32, lib, offsets, raw_bytes
import qgmm
from qgmm import _lib


class OpsTest(unittest.TestCase):
    def setUp(self):
        self.ref = CRef()

    def tearDown(self):
        self.ref.close()

    def same(self, got, want):
        self.assertEqual(np.asarray(got).shape, np.asarray(want).shape)
        self.assertEqual(raw_bytes(got), raw_bytes(want))

    # -------------------------------------------------------------- FP8 rowwise
    def rowwise(self, x, reduce_dim, offs=None, fp8="f8e4m3fn", pow2=False, kind="reciprocal",
                q_strides=None):
        ref = self.ref
        shape = x.shape
        q_out = None
        if q_strides is not None:
            q_out = qgmm.typed(np.lib.stride_tricks.as_strided(
                np.empty(int(np.prod(shape)), np.uint8), shape, q_strides), fp8)
        q, s = qgmm.quantize_fp8_rowwise(x, reduce_dim, offs, fp8_dtype=fp8, power_of_2=pow2,
                                         scale_kind=kind, q=q_out)
        qgmm.context_for(x).synchronize()
        p = _lib.Fp8RowwiseParams(reduce_dim, int(pow2), 0 if kind == "multiplier" else 1)
        tx, to = ref.inp(x), ref.inp(offs) if offs is not None else None
        tq = ref.out(shape, fp8, strides=None if q_strides is None else q_strides,
                     nbytes=None if q_strides is None else int(np.prod(shape)))
        ts = ref.out(s.shape, "f32")
        cq, cs = ref.run(lib.qgmm_quantize_fp8_rowwise, p, tx, to, tq, ts)
        self.same(q, cq)
        self.same(s, cs)
        return q, s

    def test_rowwise_rank2(self):
        x = f32((48, 160), 1)
        for rd in (0, 1):
            for fp8 in ("f8e4m3fn", "f8e4m3fnuz", "f8e5m2"):
                self.rowwise(x, rd, fp8=fp8)
        self.rowwise(x, 1, pow2=True, kind="multiplier")
        self.rowwise(bf16(x), 1)

    def test_rowwise_rank3_transposed_q(self):
        x = f32((3, 40, 64), 2)
        self.rowwise(x, 2)
        # the dgrad weight layout: q strides (R*C, 1, R) transpose each expert in memory
        self.rowwise(x, 1, q_strides=(40 * 64, 1, 40))

    def test_rowwise_jagged(self):
        x = f32((32, 96), 3)
        self.rowwise(x, 1, offsets(10, 10, 50, 96))  # groups over C, one empty
        self.rowwise(x, 0, offsets(5, 20, 32))       # groups over R

    def test_rowwise_dual(self):
        a, b = f32((24, 64), 4), f32((64, 40), 5)   # dOut^T (N, M) and x (M, K), offs over M
        offs = offsets(16, 16, 64)
        q0, s0, q1, s1 = qgmm.quantize_fp8_rowwise_dual(a, b, offs, reduce_dims=(1, 0))
        p0, p1 = _lib.Fp8RowwiseParams(1, 0, 1), _lib.Fp8RowwiseParams(0, 0, 1)
        ref = self.ref
        args = [p0, ref.inp(a), ref.out(a.shape, "f8e4m3fn"), ref.out((3, 24), "f32"),
                p1, ref.inp(b), ref.out(b.shape, "f8e4m3fn"), ref.out((3, 40), "f32"), ref.inp(offs)]
        cq0, cs0, cq1, cs1 = ref.run(lib.qgmm_quantize_fp8_rowwise_dual, *args)
        for got, want in ((q0, cq0), (s0, cs0), (q1, cq1), (s1, cs1)):
            self.same(got, want)
        # and the dual equals two single calls
        self.same(q0, qgmm.quantize_fp8_rowwise(a, 1, offs)[0])
        self.same(s1, qgmm.quantize_fp8_rowwise(b, 0, offs)[1])

    def test_rowwise_roundtrip(self):
        x = f32((16, 128), 6)
        q, s = qgmm.quantize_fp8_rowwise(x, 1)
        back = qgmm.dequantize(q, s, "fp8_rowwise", reduce_dim=1)
        err = np.linalg.norm(back - x) / np.linalg.norm(x)
        self.assertLess(err, 0.05)
        self.assertGreater(err, 0.0)

    # -------------------------------------------------------------- MXFP8
    def mx(self, x, block_dim, mode="floor", layout="plain"):
        q, s = qgmm.quantize_mxfp8(x, block_dim, mode=mode, scale_layout=layout)
        self.assertEqual(s.qgmm_dtype, "e8m0")
        r = x.ndim
        bd = block_dim % r
        p = _lib.Mxfp8Params(bd, 0 if mode == "floor" else 1, 0 if layout == "plain" else 1)
        ref = self.ref
        cq, cs = ref.run(lib.qgmm_quantize_mxfp8, p, ref.inp(x), ref.out(x.shape, "f8e4m3fn"),
                         ref.out(s.shape, "e8m0"))
        self.same(q, cq)
        self.same(s, cs)
        return q, s

    def test_mxfp8(self):
        x = f32((64, 96), 7)
        self.mx(x, 1)
        self.mx(x, 0, mode="rceil")
        self.mx(bf16(x), -1, layout="blocked")
        q, s = self.mx(f32((2, 64, 128), 8), 2, layout="blocked")
        self.assertEqual(s.shape, (2 * qgmm.blocked_scales_bytes(64, 4),))

    # -------------------------------------------------------------- FP8 blockwise
    def blockwise(self, x, block, layout):
        q, s = qgmm.quantize_fp8_blockwise(x, block, layout=layout)
        shape, strides, nbytes = qgmm.blockwise_scales_layout(x.shape, block, layout)
        self.assertEqual(np.asarray(s).shape, shape)
        self.assertEqual(np.asarray(s).strides, tuple(4 * v for v in strides))
        p = _lib.Fp8BlockwiseParams(0 if block == "1x128" else 1)
        ref = self.ref
        cq, cs = ref.run(lib.qgmm_quantize_fp8_blockwise, p, ref.inp(x), ref.out(x.shape, "f8e4m3fn"),
                         ref.out(shape, "f32", strides, nbytes))
        self.same(q, cq)
        self.same(s, cs)
        return q, s

    def test_blockwise(self):
        x = f32((40, 256), 9)
        for layout in ("row_major", "torchao", "deepgemm"):
            self.blockwise(x, "1x128", layout)
        self.blockwise(f32((2, 200, 128), 10), "128x128", "row_major")

    # -------------------------------------------------------------- dequantize
    def test_dequantize(self):
        ref = self.ref
        x = f32((32, 128), 11)
        cases = []
        q, s = qgmm.quantize_fp8_rowwise(x, 1, scale_kind="multiplier")
        cases.append((q, s, None, dict(kind="fp8_rowwise", scale_kind="multiplier"),
                      _lib.QuantFormat(0, _lib.Fp8RowwiseParams(1, 0, 0))))
        offs = offsets(40, 128)
        q, s = qgmm.quantize_fp8_rowwise(x, 1, offs)
        cases.append((q, s, offs, dict(kind="fp8_rowwise"),
                      _lib.QuantFormat(0, _lib.Fp8RowwiseParams(1, 0, 1))))
        q, s = qgmm.quantize_mxfp8(x, 1)
        cases.append((q, s, None, dict(kind="mxfp8"),
                      _lib.QuantFormat(1, _lib.Fp8RowwiseParams(1, 0, 1), _lib.Mxfp8Params(1, 0, 0))))
        q, s = qgmm.quantize_fp8_blockwise(x, "1x128", layout="torchao")
        cases.append((q, s, None, dict(kind="fp8_blockwise"),
                      _lib.QuantFormat(2, _lib.Fp8RowwiseParams(1, 0, 1), _lib.Mxfp8Params(1, 0, 0),
                                       _lib.Fp8BlockwiseParams(0))))
        for q, s, offs, kw, fmt in cases:
            for out_dtype in ("f32", "bf16"):
                got = qgmm.dequantize(q, s, offs=offs, out_dtype=out_dtype, **kw)
                ts = ref.inp(np.ascontiguousarray(s), "e8m0" if kw["kind"] == "mxfp8" else "f32")
                if kw["kind"] == "fp8_blockwise":  # the torchao view over the same bytes
                    shape, strides, nbytes = qgmm.blockwise_scales_layout(q.shape, "1x128", "torchao")
                    flat = np.zeros(nbytes // 4, np.float32)
                    np.lib.stride_tricks.as_strided(flat, shape, tuple(4 * v for v in strides))[...] = s
                    ts = ref.inp(flat)
                    for i in range(2):
                        ts.shape[i], ts.strides[i] = shape[i], strides[i]
                    ts.rank = 2
                want = CRef.run(ref, lib.qgmm_dequantize, fmt, ref.inp(q), ts,
                                ref.inp(offs) if offs is not None else None,
                                ref.out(q.shape, out_dtype))[-1]
                self.same(got, want)
        got = qgmm.dequantize(*cases[0][:2], **cases[0][3])
        self.assertLess(np.abs(got - x).max(), 0.2)

    # -------------------------------------------------------------- blocked scales
    def test_scales_blocked(self):
        ref = self.ref
        s2 = qgmm.typed(np.arange(200 * 7, dtype=np.uint8).reshape(200, 7), "e8m0")
        s3 = qgmm.typed(np.arange(2 * 130 * 5, dtype=np.uint8).reshape(2, 130, 5), "e8m0")
        m_offs, k_offs = offsets(50, 50, 200), offsets(64, 64, 224)  # K offsets in elements
        sk = qgmm.typed(np.arange(40 * 7, dtype=np.uint8).reshape(40, 7), "e8m0")
        for variant, s, offs in (("2d", s2, None), ("3d", s3, None), ("m_groups", s2, m_offs),
                                 ("k_groups", sk, k_offs)):
            starts = np.empty(3, np.int32) if offs is not None else None
            blocked = qgmm.scales_to_blocked(s, variant, offs, group_starts=starts)
            v = qgmm.constants.BLOCKED_VARIANTS[variant]
            outs = [ref.out(blocked.shape, "e8m0")]
            outs.append(ref.out((3,), "i32") if offs is not None else None)
            got_c = ref.run(lib.qgmm_scales_to_blocked, v, ref.inp(s),
                            ref.inp(offs) if offs is not None else None, *outs)
            self.same(blocked, got_c[0])
            if offs is not None:
                self.same(starts, got_c[-1])
            back = qgmm.scales_from_blocked(blocked, s.shape, variant, offs)
            self.same(back, s)  # the inverse gives the plain scales back

    # -------------------------------------------------------------- token groups
    def test_pad_unpad_row_ids(self):
        ref = self.ref
        x = bf16(f32((50, 24), 12))
        offs = offsets(7, 7, 30, 50)
        out, start, poffs = qgmm.pad_token_groups(x, offs, 16)
        rows = qgmm.padded_rows_bound(50, 4, 16)
        self.assertEqual(out.shape, (rows, 24))
        c_out, c_start, c_poffs = ref.run(lib.qgmm_pad_token_groups, 16, ref.inp(x), ref.inp(offs),
                                          ref.out((rows, 24), "bf16"), ref.out((4,), "i32"),
                                          ref.out((4,), "i32"))
        self.same(out, c_out)
        self.same(start, c_start)
        self.same(poffs, c_poffs)
        back = qgmm.unpad_token_groups(out, offs, 50, 16)
        self.same(back, x)
        ids = qgmm.group_row_ids(offs, 50)
        pids = qgmm.group_row_ids(offs, rows, poffs)
        ref2 = CRef()
        try:
            c_ids, = ref2.run(lib.qgmm_group_row_ids, ref2.inp(offs), None, ref2.out((50,), "i32"))
        finally:
            ref2.close()
        self.same(ids, c_ids)
        self.assertEqual(list(np.bincount(ids, minlength=4)), [7, 0, 23, 20])
        self.assertEqual(int((pids >= 0).sum()), 50)

    # -------------------------------------------------------------- grouped GEMM
    def gemm(self, kind, recipe, a, b, offs, a_scales=None, b_scales=None, out_dtype="bf16"):
        got = qgmm.grouped_gemm(a, b, offs, kind=kind, recipe=recipe, a_scales=a_scales,
                                b_scales=b_scales, out_dtype=out_dtype)
        ref = self.ref
        p = _lib.GroupedGemmParams(0 if kind == "m_grouped" else 1, qgmm.constants.RECIPES[recipe])

        def inp(t):
            if t is None:
                return None
            return ref.inp(np.ascontiguousarray(t), getattr(t, "qgmm_dtype", None))

        want, = ref.run(lib.qgmm_grouped_gemm, p, inp(a), inp(b), inp(a_scales), inp(b_scales),
                        ref.inp(offs), ref.out(got.shape, out_dtype))
        self.same(got, want)
        return got

    def test_grouped_gemm(self):
        M, K, N, E = 96, 128, 64, 3
        offs = offsets(30, 30, 96)
        xa, wa = f32((M, K), 13), f32((E, N, K), 14, 0.1)
        y = self.gemm("m_grouped", "bf16", bf16(xa), bf16(wa), offs)
        want = np.concatenate([bf16_to_f32(bf16(xa))[0:30] @ bf16_to_f32(bf16(wa))[0].T,
                               bf16_to_f32(bf16(xa))[30:96] @ bf16_to_f32(bf16(wa))[2].T])
        self.assertLess(np.abs(bf16_to_f32(y) - want).max(), 0.05)
        qa, sa = qgmm.quantize_fp8_rowwise(xa, 1)
        qw, sw = qgmm.quantize_fp8_rowwise(wa, 2)
        self.gemm("m_grouped", "fp8_rowwise", qa, qw, offs, sa, sw, out_dtype="f32")
        qa, sa = qgmm.quantize_fp8_blockwise(xa, "1x128")
        qw, sw = qgmm.quantize_fp8_blockwise(wa, "128x128")
        self.gemm("m_grouped", "fp8_blockwise", qa, qw, offs, sa, sw)
        qa, plain = qgmm.quantize_mxfp8(xa, 1)
        sa = qgmm.scales_to_blocked(plain, "m_groups", offs)
        qg, sg = qgmm.quantize_mxfp8(xa, 1, offs, scale_layout="m_groups")
        self.same(qg, qa)
        self.same(sg, sa)
        qw, sw = qgmm.quantize_mxfp8(wa, 2, scale_layout="blocked")
        self.gemm("m_grouped", "mxfp8", qa, qw, offs, sa, sw)
        # K-grouped (wgrad): a (M, N), b (M, K) -> (G, N, K)
        dy = f32((M, N), 15)
        self.gemm("k_grouped", "bf16", bf16(dy), bf16(xa), offs, out_dtype="f32")
        qd, sd, qx, sx = qgmm.quantize_fp8_rowwise_dual(dy.T.copy(), xa, offs, reduce_dims=(1, 0))
        self.gemm("k_grouped", "fp8_rowwise", qgmm.typed(np.asarray(qd).T, "f8e4m3fn"), qx, offs,
                  sd, sx)
        # K-grouped blockwise / MXFP8: both operands scaled along M in blocks that the
        # groups (multiples of 128 here, one empty) do not straddle; operands M-contiguous
        M2 = 256
        koffs = offsets(128, 128, 256)
        dyt, xt = f32((N, M2), 19), f32((K, M2), 20)   # dy^T (N, M) and x^T (K, M)

        def colmajor(q):
            return qgmm.typed(np.asarray(q).T, q.qgmm_dtype)

        qa, sa = qgmm.quantize_fp8_blockwise(dyt, "1x128")
        qb, sb = qgmm.quantize_fp8_blockwise(xt, "1x128")
        self.gemm("k_grouped", "fp8_blockwise", colmajor(qa), colmajor(qb), koffs, sa, sb)
        qa, pa = qgmm.quantize_mxfp8(dyt, 1)
        qb, pb = qgmm.quantize_mxfp8(xt, 1)
        sa = qgmm.scales_to_blocked(pa, "k_groups", koffs)
        sb = qgmm.scales_to_blocked(pb, "k_groups", koffs)
        # the same bytes from one grouped cast of the (M, N) tokens, blocks along M
        qg, sg = qgmm.quantize_mxfp8(np.ascontiguousarray(dyt.T), 0, koffs, scale_layout="k_groups")
        self.assertEqual(raw_bytes(qg), raw_bytes(np.asarray(qa).T))
        self.same(sg, sa)
        self.gemm("k_grouped", "mxfp8", colmajor(qa), colmajor(qb), koffs, sa, sb)

    # -------------------------------------------------------------- composite MoE
    def test_moe(self):
        M, K, N, E = 160, 128, 128, 3
        offs = offsets(40, 40, 160)
        x, w, dy = bf16(f32((M, K), 16)), bf16(f32((E, N, K), 17, 0.1)), bf16(f32((M, N), 18))
        for recipe in ("bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"):
            with self.subTest(recipe=recipe):
                ref = CRef()
                try:
                    y = qgmm.moe_experts_forward(x, w, offs, recipe=recipe)
                    dx, dw = qgmm.moe_experts_backward(x, w, dy, offs, recipe=recipe)
                    p = _lib.MoeParams(qgmm.constants.RECIPES[recipe], 4, qgmm.constants.MX_MODES["rceil"])
                    need = lib.qgmm_moe_workspace_bytes(ctypes.byref(p), M, N, K, E)
                    self.assertEqual(need, qgmm.moe_workspace_bytes(recipe, M, N, K, E))
                    ws = ref.workspace(need)
                    cy, = ref.run(lib.qgmm_moe_experts_forward, p, ref.inp(x), ref.inp(w),
                                  ref.inp(offs), ref.out((M, N), "bf16"), ws)
                    self.same(y, cy)
                    ref.outs.clear()
                    cdx, cdw = ref.run(lib.qgmm_moe_experts_backward, p, ref.inp(x), ref.inp(w),
                                       ref.inp(dy), ref.inp(offs), ref.out((M, K), "bf16"),
                                       ref.out((E, N, K), "bf16"), ws)
                    self.same(dx, cdx)
                    self.same(dw, cdw)
                finally:
                    ref.close()
        self.assertEqual(qgmm.moe_workspace_bytes("bf16", M, N, K, E), 0)


class BufferTest(unittest.TestCase):
    def test_buffers_and_events(self):
        with qgmm.Context("cpu") as ctx:
            self.assertIn("cpu", ctx.describe())
            b = ctx.alloc(64)
            self.assertEqual(b.size, 64)
            b.upload(bytes(range(64)))
            b.fill(7, 8, 8)
            c = ctx.alloc(64)
            c.copy_from(b, 64)
            self.assertEqual(c.download(16), bytes(range(8)) + bytes([7] * 8))
            host = np.arange(16, dtype=np.uint8)
            w = ctx.wrap(host.ctypes.data, 16)
            self.assertEqual(w.native, host.ctypes.data)
            w.fill(1, 0, 4)
            self.assertEqual(list(host[:5]), [1, 1, 1, 1, 4])
            e0, e1 = ctx.event(), ctx.event()
            e0.record()
            e1.record()
            self.assertGreaterEqual(e0.elapsed_ms(e1), 0.0)
            for x in (b, c, w):
                x.free()

    def test_backends_and_dtypes(self):
        names = [b.name for b in qgmm.backends()]
        self.assertEqual(names[0], "cpu")
        self.assertTrue(qgmm.backends()[0].available)
        self.assertEqual(qgmm.dtype_size("bf16"), 2)
        self.assertEqual(lib.qgmm_dtype_name(4), b"f8e4m3fn")


if __name__ == "__main__":
    unittest.main()
