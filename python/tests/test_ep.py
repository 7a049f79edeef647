"""qgmm.ep on loopback ranks (one cpu context and one thread per rank, in this process):
the expert-parallel layer's forward and backward byte-identical to the one-device
composite on the same global tokens and weights (docs/ep.md, "Equivalence with one
device"), the dispatch / combine layout, low-precision dispatch, and refusals."""
import unittest

import numpy as np

from support import bf16, bf16_to_f32, f32, raw_bytes, rng
import qgmm
from qgmm import ep


def to_f32(a):
    return bf16_to_f32(a) if getattr(a, "qgmm_dtype", None) == "bf16" else np.asarray(a, np.float32)


def rounded(a, dtype):
    return bf16(a) if dtype == "bf16" else np.asarray(a, np.float32)


class World:
    """Global tokens of R ranks (rank 0's first), their routing and the experts' weights."""

    def __init__(self, R, T, E, k, N, K, seed, expert_rank=None, unused=None):
        self.R, self.T, self.E, self.k, self.N, self.K = R, T, E, k, N, K
        self.off = np.concatenate([[0], np.cumsum(T)]).astype(int)
        Tg = int(self.off[-1])
        g = rng(seed)
        choices = [e for e in range(E) if e != unused]
        self.ids = np.array([g.choice(choices, k, replace=False) for _ in range(Tg)], np.int32).reshape(Tg, k)
        self.wt = g.random((Tg, k), dtype=np.float32)
        self.x, self.dy = bf16(f32((Tg, K), seed + 1)), bf16(f32((Tg, N), seed + 2))
        self.w = bf16(f32((E, N, K), seed + 3, 1.0 / np.sqrt(K)))
        self.expert_rank = expert_rank

    def rank_rows(self, r, a):
        s = slice(self.off[r], self.off[r + 1])
        return qgmm.typed(np.ascontiguousarray(a[s]), a.qgmm_dtype) if hasattr(a, "qgmm_dtype") and \
            a.qgmm_dtype else np.ascontiguousarray(a[s])

    def reference(self, recipe, out_dtype):
        """The one-device composite over all (token, slot) rows stably sorted by expert,
        then the weighted sums in f32 in slot order, rounded once."""
        k, Tg = self.k, self.x.shape[0]
        order = np.argsort(self.ids.ravel(), kind="stable")
        row = np.empty(Tg * k, np.int64)
        row[order] = np.arange(Tg * k)
        row = row.reshape(Tg, k)
        xp = bf16(to_f32(self.x)[order // k])
        dyp = bf16(self.wt.ravel()[order][:, None] * to_f32(self.dy)[order // k])
        offs = np.cumsum(np.bincount(self.ids.ravel(), minlength=self.E)).astype(np.int32)
        ctx = qgmm.Context("cpu")
        y = qgmm.moe_experts_forward(xp, self.w, offs, recipe=recipe, out_dtype=out_dtype, ctx=ctx)
        dx, dw = qgmm.moe_experts_backward(xp, self.w, dyp, offs, recipe=recipe, out_dtype=out_dtype, ctx=ctx)
        ctx.synchronize()
        y, dx = to_f32(y), to_f32(dx)
        y_ref = np.zeros((Tg, self.N), np.float32)
        dx_ref = np.zeros((Tg, self.K), np.float32)
        for j in range(k):
            y_ref = y_ref + self.wt[:, j:j + 1] * y[row[:, j]]
            dx_ref = dx_ref + np.float32(1.0) * dx[row[:, j]]
        return rounded(y_ref, out_dtype), rounded(dx_ref, out_dtype), dw


def layer_ranks(world, recipe, out_dtype, bad_rank=-1):
    """Every rank's (y, dx, dw_local, local expert ids, synchronize's error or None)."""
    comms = ep.Comm.loopback(world.R)

    def rank(comm):
        r = comm.rank
        layer = ep.MoeLayer(comm, world.E, world.k, max(world.T), world.N, world.K, recipe=recipe,
                            out_dtype=out_dtype, expert_rank=world.expert_rank)
        ids = world.rank_rows(r, world.ids).copy()
        if r == bad_rank and len(ids):
            ids[-1, -1] = world.E
        wl = (qgmm.typed(np.ascontiguousarray(world.w[layer.local_expert_ids]), "bf16")
              if layer.local_experts else None)
        x, dy, wt = world.rank_rows(r, world.x), world.rank_rows(r, world.dy), world.rank_rows(r, world.wt)
        y = layer.forward(x, ids, wt, wl)
        dx, dw = layer.backward(dy, wt, wl)
        try:
            comm.ctx.synchronize()
            err = None
        except qgmm.QgmmError as e:
            err = e
        return y, dx, dw, layer.local_expert_ids, err

    return ep.run_ranks(rank, comms, timeout=120)


class EpLayerTest(unittest.TestCase):
    def check_layer(self, world, recipe, out_dtype="bf16"):
        y_ref, dx_ref, dw_ref = world.reference(recipe, out_dtype)
        self.assertTrue(np.all(np.isfinite(to_f32(y_ref))) and np.any(to_f32(y_ref)))
        for r, (y, dx, dw, local, err) in enumerate(layer_ranks(world, recipe, out_dtype)):
            what = f"R={world.R} {recipe} {out_dtype} rank {r}"
            self.assertIsNone(err, what)
            self.assertEqual(raw_bytes(y), raw_bytes(world.rank_rows(r, y_ref)), what + ": y")
            self.assertEqual(raw_bytes(dx), raw_bytes(world.rank_rows(r, dx_ref)), what + ": dx")
            for l, e in enumerate(local):
                self.assertEqual(raw_bytes(dw[l]), raw_bytes(dw_ref[e]), f"{what}: dw of expert {e}")

    def test_two_ranks_every_recipe(self):
        for recipe in ("bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"):
            self.check_layer(World(2, [37, 21], 4, 2, 128, 128, 10), recipe)

    def test_four_ranks_every_recipe(self):
        # uneven tokens, a rank with none, an expert no token picks
        for recipe in ("bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"):
            self.check_layer(World(4, [29, 0, 45, 8], 8, 2, 128, 128, 20, unused=5), recipe)

    def test_expert_map_and_f32_outputs(self):
        # a rank holding no experts (rank 1), top-3 routing
        world = World(4, [12, 17, 9, 30], 6, 3, 64, 96, 30, expert_rank=[0, 2, 3, 0, 3, 2])
        self.check_layer(world, "bf16", "f32")
        self.check_layer(world, "fp8_rowwise", "f32")

    def test_bad_expert_id_refuses_the_step_everywhere(self):
        world = World(2, [10, 14], 4, 2, 64, 64, 40)
        results = layer_ranks(world, "bf16", "bf16", bad_rank=1)
        for r, (*_, err) in enumerate(results):
            self.assertIsInstance(err, qgmm.BadOffsetsError, f"rank {r}")
            self.assertIn("qgmm_ep_route", err.message)
            self.assertIn("expert_ids", err.message)


class EpOpsTest(unittest.TestCase):
    """Plan.route / dispatch / combine against the layout docs/ep.md describes."""

    R, E, k, D, align = 3, 6, 2, 64, 16

    def setUp(self):
        self.T = [7, 0, 12]
        g = rng(50)
        self.ids = [g.integers(0, self.E, (t, self.k)).astype(np.int32) for t in self.T]
        self.x = [f32((t, self.D), 51 + r) for r, t in enumerate(self.T)]
        self.wt = [g.random((t, self.k), dtype=np.float32) for t in self.T]

    def expected_layout(self, plan, rows_of):
        """Local expert l's rows: rank 0's (token, slot) rows first, token then slot order,
        each expert's block padded to the alignment with zeros."""
        blocks, offs, end = [], [], 0
        for e in plan.local_expert_ids:
            got = [rows_of(r, t, j) for r in range(self.R) for t in range(self.T[r]) for j in range(self.k)
                   if self.ids[r][t, j] == e]
            pad = -len(got) % self.align
            blocks += got + [np.zeros_like(rows_of(0, 0, 0))] * pad
            end += len(got) + pad
            offs.append(end)
        return np.array(blocks).reshape(end, -1), np.array(offs, np.int32)

    def test_dispatch_combine(self):
        comms = ep.Comm.loopback(self.R)

        def rank(comm):
            r = comm.rank
            plan = ep.Plan(comm, self.E, self.k, max(self.T), ep.wire_row_bytes("f32", self.D, 4))  # the widest row: f32 x
            plan.route(self.ids[r])
            rows = plan.received_rows()
            out, _, offs = plan.dispatch(self.x[r], rows=rows)
            back = plan.combine(out, self.wt[r])
            weighted, _, _ = plan.dispatch(self.x[r], weights=self.wt[r], rows=rows)
            q, s = qgmm.quantize_fp8_rowwise(self.x[r], 1, ctx=comm.ctx)
            q_out, s_out, _ = plan.dispatch(q, x_scales=s, rows=rows)
            mq, ms = qgmm.quantize_mxfp8(self.x[r], 1, ctx=comm.ctx)
            _, ms_plain, _ = plan.dispatch(mq, x_scales=ms, rows=rows)
            _, ms_blocked, _ = plan.dispatch(mq, x_scales=ms, rows=rows, scale_layout="m_groups")
            ms_back = (qgmm.scales_from_blocked(ms_blocked, ms_plain.shape, "m_groups", offs, ctx=comm.ctx)
                       if rows else ms_plain)
            comm.ctx.synchronize()
            self.assertEqual(raw_bytes(ms_back), raw_bytes(ms_plain), f"rank {r}: MXFP8 blocked scales")
            return plan.local_expert_ids, rows, out, offs, back, weighted, q, s, q_out, s_out

        results = ep.run_ranks(rank, comms, timeout=120)
        qs = [res[6] for res in results]
        ss = [res[7] for res in results]
        for r, (local, rows, out, offs, back, weighted, q, s, q_out, s_out) in enumerate(results):
            plan_like = type("P", (), {"local_expert_ids": local})
            want, want_offs = self.expected_layout(plan_like, lambda rr, t, j: self.x[rr][t])
            self.assertEqual(rows, len(want))
            self.assertEqual(raw_bytes(out), raw_bytes(want), f"rank {r}: dispatch")
            self.assertEqual(raw_bytes(offs), raw_bytes(want_offs), f"rank {r}: offs")
            want_w, _ = self.expected_layout(plan_like, lambda rr, t, j: self.x[rr][t] * self.wt[rr][t, j])
            self.assertEqual(raw_bytes(weighted), raw_bytes(want_w), f"rank {r}: weighted dispatch")
            want_q, _ = self.expected_layout(plan_like, lambda rr, t, j: np.asarray(qs[rr][t]))
            self.assertEqual(raw_bytes(q_out), raw_bytes(want_q), f"rank {r}: fp8 dispatch")
            want_s, _ = self.expected_layout(plan_like, lambda rr, t, j: ss[rr][t:t + 1])
            self.assertEqual(raw_bytes(s_out), raw_bytes(want_s.ravel()), f"rank {r}: fp8 scales")
            acc = np.zeros((self.T[r], self.D), np.float32)
            for j in range(self.k):
                acc = acc + self.wt[r][:, j:j + 1] * self.x[r]
            self.assertEqual(raw_bytes(back), raw_bytes(acc), f"rank {r}: combine")

    def test_plan_refusals(self):
        comm = ep.Comm.loopback(2)[0]
        with self.assertRaises(qgmm.InvalidArgumentError) as cm:
            ep.Plan(comm, 4, 2, 8, 256, alignment=24)
        self.assertIn("alignment", cm.exception.message)
        with self.assertRaises(qgmm.InvalidArgumentError) as cm:
            ep.Plan(comm, 5, 2, 8, 256)  # an even split needs E a multiple of R
        self.assertIn("num_experts", cm.exception.message)
        with self.assertRaises(qgmm.UnsupportedError):
            ep.nccl_unique_id(comm.ctx)  # the cpu backend has no NCCL

    def test_comm_properties(self):
        comms = ep.Comm.loopback(4)
        self.assertEqual([c.rank for c in comms], [0, 1, 2, 3])
        self.assertEqual({c.nranks for c in comms}, {4})
        plan = ep.Plan(comms[2], 8, 2, 16, ep.wire_row_bytes("bf16", 64))
        self.assertEqual(plan.local_expert_ids, [4, 5])
        self.assertGreaterEqual(plan.recv_rows, 4 * 16 * 2)


if __name__ == "__main__":
    unittest.main()
