"""qgmm for PyTorch: grouped_mm with autograd as torch.library custom ops, and a routed
expert layer.

    y = qgmm.torch.grouped_mm(x, w, offs, recipe="fp8_rowwise")

x (M, K) bf16, w (E, N, K) bf16, offs int32 (E) cumulative group ends on x's device;
y (M, N) bf16 with y[rows of group g] = x[rows of g] . w[g]^T (rows past offs[-1] are
left unspecified). torch._grouped_mm(x, w.transpose(-2, -1), offs=offs) computes the same
in BF16. The forward and backward are qgmm_moe_experts_forward / _backward: the recipe's
casts, padding and grouped GEMMs on the tensor's current stream, outputs and the
workspace from PyTorch's allocator, the offsets never read on the host. So the ops trace
under torch.compile(fullgraph=True) (fake implementations give the shapes) and capture
into CUDA graphs (nothing synchronises; warm up once on the capture stream first, which
creates qgmm's context for that stream).

ExpertParallelExperts is the expert-parallel layer (experts spread over the ranks of a
torch.distributed NCCL group, or of loopback qgmm.ep.Comm ranks on the CPU), ep_comm its
communicator (qgmm/torch_ep.py).
"""
import math

import torch

from . import ops
from .arrays import context_for

if not hasattr(torch.library, "custom_op"):
    raise ImportError(f"qgmm.torch needs PyTorch 2.4 or later (torch.library.custom_op); "
                      f"this is {torch.__version__}")

RECIPES = ("bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8")


def _check_recipe(recipe):
    if recipe not in RECIPES:
        raise ValueError(f"recipe is {recipe!r}; one of {', '.join(map(repr, RECIPES))}")


@torch.library.custom_op("qgmm::grouped_mm", mutates_args=())
def _grouped_mm_op(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor, recipe: str) -> torch.Tensor:
    return ops.moe_experts_forward(x, w, offs, recipe=recipe)


@_grouped_mm_op.register_fake
def _grouped_mm_fake(x, w, offs, recipe):
    return x.new_empty((x.shape[0], w.shape[1]))


@torch.library.custom_op("qgmm::grouped_mm_backward", mutates_args=())
def _grouped_mm_backward_op(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor, offs: torch.Tensor,
                            recipe: str) -> tuple[torch.Tensor, torch.Tensor]:
    return ops.moe_experts_backward(x, w, dy, offs, recipe=recipe)


@_grouped_mm_backward_op.register_fake
def _grouped_mm_backward_fake(x, w, dy, offs, recipe):
    return x.new_empty(x.shape), w.new_empty(w.shape)


def _setup_context(ctx, inputs, output):
    x, w, offs, recipe = inputs
    ctx.save_for_backward(x, w, offs)
    ctx.recipe = recipe


def _backward(ctx, dy):
    x, w, offs = ctx.saved_tensors
    dx, dw = _grouped_mm_backward_op(x, w, dy.contiguous(), offs, ctx.recipe)
    return dx, dw, None, None


_grouped_mm_op.register_autograd(_backward, setup_context=_setup_context)


def grouped_mm(x, w, offs, recipe="bf16"):
    """y (M, N) = x_g . w_g^T per expert group, differentiable in x and w.

    x: (M, K) bf16; w: (E, N, K) bf16; offs: int32 (E) cumulative group ends, on x's
    device (empty groups are fine). recipe: "bf16", "fp8_rowwise", "fp8_blockwise"
    (N, K multiples of 128) or "mxfp8" (N, K multiples of 32)."""
    _check_recipe(recipe)
    return _grouped_mm_op(x, w, offs, recipe)


def synchronize(like):
    """Waits for qgmm's work on the stream an op on `like` would use now, and raises
    qgmm.BadOffsetsError if an op there saw invalid offsets (a host synchronisation:
    for checks and tests, not inside a training step)."""
    context_for(like).synchronize()


class GroupedExperts(torch.nn.Module):
    """The routed experts of an MoE layer (SwiGLU per expert), on tokens already sorted
    by expert: out = (silu(x . w1_g^T) * (x . w3_g^T)) . w2_g^T for the rows of group g.

    w1, w3: (E, hidden, dim); w2: (E, dim, hidden); all bf16. forward(x (M, dim) bf16,
    offs int32 (E)) -> (M, dim)."""

    def __init__(self, num_experts, dim, hidden_dim, recipe="bf16", device=None):
        super().__init__()
        _check_recipe(recipe)
        self.recipe = recipe
        kw = dict(device=device, dtype=torch.bfloat16)
        self.w1 = torch.nn.Parameter(torch.empty(num_experts, hidden_dim, dim, **kw))
        self.w3 = torch.nn.Parameter(torch.empty(num_experts, hidden_dim, dim, **kw))
        self.w2 = torch.nn.Parameter(torch.empty(num_experts, dim, hidden_dim, **kw))
        self.reset_parameters()

    def reset_parameters(self):
        for w in (self.w1, self.w3, self.w2):
            torch.nn.init.normal_(w, std=1.0 / math.sqrt(w.shape[-1]))

    def forward(self, x, offs):
        h = torch.nn.functional.silu(grouped_mm(x, self.w1, offs, self.recipe)) * \
            grouped_mm(x, self.w3, offs, self.recipe)
        return grouped_mm(h, self.w2, offs, self.recipe)

    def extra_repr(self):
        e, h, d = self.w1.shape
        return f"num_experts={e}, dim={d}, hidden_dim={h}, recipe={self.recipe!r}"


# the expert-parallel layer over a torch.distributed process group (docs/ep.md)
from .torch_ep import ExpertParallelExperts, ep_comm  # noqa: E402,F401
