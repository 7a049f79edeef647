"""Bad input raises the QgmmError subclass of the C status, with the library's sentence,
and changes nothing; bad device-side offsets surface at synchronize."""
import unittest

import numpy as np

from support import bf16, f32, offsets
import qgmm


class ErrorsTest(unittest.TestCase):
    def test_wrong_dtype_changes_nothing(self):
        x = f32((16, 64), 1)
        q = qgmm.typed(np.full((16, 64), 0x5A, np.uint8), "f8e4m3fn")
        s = np.full(16, 3.0, np.float32)
        before = (x.copy(), q.copy(), s.copy())
        # x as int32: not an f32/bf16 input
        with self.assertRaises(qgmm.InvalidArgumentError) as cm:
            qgmm.quantize_fp8_rowwise(x.view(np.int32), 1, q=q, scales=s)
        self.assertEqual(cm.exception.status, 1)
        self.assertEqual(cm.exception.status_name, "QGMM_ERR_INVALID_ARGUMENT")
        self.assertIn("x", cm.exception.message)
        self.assertIn("i32", cm.exception.message)
        # q tagged bf16: not an fp8 dtype
        with self.assertRaises(qgmm.InvalidArgumentError) as cm:
            qgmm.quantize_fp8_rowwise(x, 1, q=qgmm.typed(np.zeros((16, 32), np.uint16), "bf16"),
                                      scales=s)
        self.assertIn("q", cm.exception.message)
        # a NumPy dtype qgmm has no name for
        with self.assertRaises(qgmm.InvalidArgumentError):
            qgmm.quantize_fp8_rowwise(x.astype(np.float64), 1, q=q, scales=s)
        # scales of the wrong shape
        with self.assertRaises(qgmm.InvalidArgumentError) as cm:
            qgmm.quantize_fp8_rowwise(x, 1, q=q, scales=np.zeros(15, np.float32))
        self.assertIn("scales", cm.exception.message)
        for got, want in zip((x, q, s), before):
            self.assertEqual(np.asarray(got).tobytes(), np.asarray(want).tobytes())

    def test_bad_enum_names(self):
        x = f32((16, 64), 2)
        with self.assertRaises(ValueError):
            qgmm.quantize_fp8_rowwise(x, 1, scale_kind="inverse")
        with self.assertRaises(ValueError):
            qgmm.grouped_gemm(x, x, offsets(16), recipe="fp4")

    def test_bad_offsets_at_synchronize(self):
        M, K, N, E = 64, 128, 32, 3
        x, w = bf16(f32((M, K), 3)), bf16(f32((E, N, K), 4, 0.1))
        ctx = qgmm.context_for(x)
        ctx.synchronize()
        for bad in (offsets(40, 20, 64), offsets(10, 30, 65), offsets(-1, 30, 64)):
            with self.subTest(offs=list(bad)):
                out = np.full((M, N), 0x3F80, np.uint16)
                y = qgmm.grouped_gemm(x, w, bad, out=qgmm.typed(out, "bf16"))
                with self.assertRaises(qgmm.BadOffsetsError) as cm:
                    ctx.synchronize()
                self.assertEqual(cm.exception.status, 6)
                self.assertIn("offsets", cm.exception.message)
                self.assertTrue((np.asarray(y) == 0x3F80).all())  # the op wrote nothing
                ctx.synchronize()  # the status word was cleared
        xs = f32((32, 96), 5)
        q = qgmm.typed(np.full((32, 96), 0x11, np.uint8), "f8e4m3fn")
        s = np.full((2, 32), 7.0, np.float32)
        qgmm.quantize_fp8_rowwise(xs, 1, offsets(50, 40), q=q, scales=s)
        with self.assertRaises(qgmm.BadOffsetsError):
            ctx.synchronize()
        self.assertTrue((np.asarray(q) == 0x11).all() and (s == 7.0).all())

    def test_contexts(self):
        with self.assertRaises(qgmm.UnsupportedError) as cm:
            qgmm.Context("cpu", stream=0)
        self.assertIn("stream", cm.exception.message)
        with self.assertRaises(qgmm.BackendUnavailableError) as cm:
            qgmm.Context("no-such-backend")
        self.assertIn("no-such-backend", cm.exception.message)
        with self.assertRaises(qgmm.InvalidArgumentError):
            qgmm.Context("cpu", device=-1)
        self.assertTrue(issubclass(qgmm.InvalidArgumentError, qgmm.QgmmError))
        self.assertTrue(issubclass(qgmm.InvalidArgumentError, ValueError))

    def test_array_checks(self):
        x = f32((16, 64), 6)
        with self.assertRaises(qgmm.InvalidArgumentError):
            qgmm.quantize_fp8_rowwise(x[:, ::-1], 1)  # negative strides
        with self.assertRaises(qgmm.InvalidArgumentError):
            qgmm.quantize_fp8_rowwise(x.reshape(2, 2, 4, 64), 1)  # rank 4
        with self.assertRaises(ValueError):
            qgmm.typed(np.zeros(4, np.float32), "bf16")  # item size mismatch
        with qgmm.Context("cpu") as other:
            q, s = qgmm.quantize_fp8_rowwise(x, 1, ctx=other)  # an explicit context
            other.synchronize()
            self.assertEqual(np.asarray(q).tobytes(),
                             np.asarray(qgmm.quantize_fp8_rowwise(x, 1)[0]).tobytes())


if __name__ == "__main__":
    unittest.main()
