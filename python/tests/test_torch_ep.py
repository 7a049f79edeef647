"""qgmm.torch.ExpertParallelExperts on loopback ranks with CPU tensors (skipped without
PyTorch, as in CI): forward and backward through autograd byte-identical to the
one-device composite, like test_ep.py's MoeLayer."""
import unittest

import numpy as np

from support import raw_bytes
from test_ep import World
from qgmm import ep

try:
    import torch
    from qgmm.torch_ep import ExpertParallelExperts
except ImportError:
    torch = None


def tensor(a, dtype=None):
    """A CPU tensor over a NumPy array's bytes (bf16-tagged arrays become bfloat16)."""
    is_bf16 = getattr(a, "qgmm_dtype", None) == "bf16"
    a = np.ascontiguousarray(a)
    if is_bf16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def tensor_bytes(t):
    return t.detach().contiguous().view(torch.int16 if t.dtype == torch.bfloat16 else t.dtype).numpy().tobytes()


@unittest.skipUnless(torch is not None, "needs PyTorch")
class TorchEpTest(unittest.TestCase):
    def run_world(self, world, recipe):
        y_ref, dx_ref, dw_ref = world.reference(recipe, "bf16")
        comms = ep.Comm.loopback(world.R)

        def rank(comm):
            r = comm.rank
            m = ExpertParallelExperts(world.E, world.K, world.N, world.k, max(world.T), comm=comm, recipe=recipe)
            with torch.no_grad():
                m.weight.copy_(tensor(world.w[m.local_expert_ids] if m.local_expert_ids else
                                      np.zeros((0, world.N, world.K), np.float32)).to(torch.bfloat16))
            x = tensor(world.rank_rows(r, world.x)).requires_grad_()
            y = m(x, tensor(world.rank_rows(r, world.ids)), tensor(world.rank_rows(r, world.wt)))
            y.backward(tensor(world.rank_rows(r, world.dy)))
            comm.ctx.synchronize()
            return y, x.grad, m.weight.grad, m.local_expert_ids

        for r, (y, dx, dw, local) in enumerate(ep.run_ranks(rank, comms, timeout=120)):
            self.assertEqual(tensor_bytes(y), raw_bytes(world.rank_rows(r, y_ref)), f"rank {r}: y")
            self.assertEqual(tensor_bytes(dx), raw_bytes(world.rank_rows(r, dx_ref)), f"rank {r}: dx")
            for l, e in enumerate(local):
                self.assertEqual(tensor_bytes(dw[l]), raw_bytes(dw_ref[e]), f"rank {r}: dw of expert {e}")

    def test_two_and_four_ranks(self):
        self.run_world(World(2, [19, 11], 4, 2, 64, 64, 60), "bf16")
        self.run_world(World(4, [13, 0, 22, 5], 8, 2, 128, 128, 61), "fp8_rowwise")

    def test_router_weights_needing_grad_are_refused(self):
        comm = ep.Comm.loopback(1)[0]
        m = ExpertParallelExperts(2, 32, 32, 1, 4, comm=comm)
        w = torch.ones(4, 1, requires_grad=True)
        with self.assertRaises(ValueError):
            m(torch.zeros(4, 32, dtype=torch.bfloat16), torch.zeros(4, 1, dtype=torch.int32), w)


if __name__ == "__main__":
    unittest.main()
