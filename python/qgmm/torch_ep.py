"""The expert-parallel MoE layer for PyTorch (qgmm.torch.ExpertParallelExperts) and its
communicator from a torch.distributed process group (qgmm.torch.ep_comm). docs/ep.md.

One process per GPU (torchrun): every rank holds its local experts' weights, routes its
own tokens, and the layer's forward and backward run qgmm_ep_moe_forward / _backward
(route -> dispatch -> the local experts' grouped GEMMs -> combine) on the current stream.
"""
import torch

from . import ep
from ._lib import EP_UNIQUE_ID_BYTES
from .arrays import context_for

# Which NCCL communicator qgmm uses (ep_comm's `share`):
#   "auto"           the process group's own ncclComm_t where this PyTorch build exposes it
#                    (ProcessGroupNCCL._comm_ptr), else "own";
#   "process_group"  only the process group's (an error where it is not reachable);
#   "own"            a communicator qgmm creates and owns from a unique id that the group's
#                    rank 0 broadcasts through the group. It is independent of PyTorch's
#                    collectives (no ordering between qgmm's stream and PyTorch's NCCL
#                    stream to get right), at the cost of NCCL's buffers a second time.
SHARE_CHOICES = ("auto", "process_group", "own")


def _process_group_comm(group, device):
    """The ncclComm_t (an int) behind `group` on `device`, or 0 where this build hides it.
    PyTorch creates its communicators lazily: one small all_reduce makes sure it exists."""
    import torch.distributed as dist
    pg = group if group is not None else dist.group.WORLD
    try:
        backend = pg._get_backend(device)
    except (AttributeError, RuntimeError, ValueError):
        return 0
    if not hasattr(backend, "_comm_ptr"):
        return 0
    dist.all_reduce(torch.zeros(1, device=device), group=group)
    torch.cuda.synchronize(device)
    ptr = backend._comm_ptr  # a method in most builds, a property in some
    try:
        return int(ptr() if callable(ptr) else ptr)
    except (RuntimeError, TypeError, ValueError):
        return 0


def ep_comm(group=None, device=None, share="auto"):
    """A qgmm.ep.Comm for this process's rank of the torch.distributed NCCL process group
    `group` (None: the default group), on the current stream of the CUDA `device`
    (default: the current device): the layer's ops run on that stream. Collective: every
    rank of the group calls it. `share` picks the communicator (SHARE_CHOICES above)."""
    import torch.distributed as dist
    if share not in SHARE_CHOICES:
        raise ValueError(f"share is {share!r}; one of {', '.join(map(repr, SHARE_CHOICES))}")
    device = torch.device("cuda", torch.cuda.current_device() if device is None else torch.device(device).index)
    ctx = context_for(torch.empty(0, device=device))
    if share != "own":
        ptr = _process_group_comm(group, device)
        every = torch.tensor([1 if ptr else 0], device=device)
        dist.all_reduce(every, op=dist.ReduceOp.MIN, group=group)  # every rank takes one path
        if every.item():
            return ep.Comm.from_nccl(ctx, ptr)
        if share == "process_group":
            raise RuntimeError("ep_comm: this PyTorch build does not expose the process group's "
                               "ncclComm_t (ProcessGroupNCCL._comm_ptr); use share='own'")
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    uid = torch.zeros(EP_UNIQUE_ID_BYTES, dtype=torch.uint8, device=device)
    if rank == 0:
        uid.copy_(torch.tensor(list(ep.nccl_unique_id(ctx)), dtype=torch.uint8))
    src = dist.get_global_rank(group, 0) if group is not None else 0
    dist.broadcast(uid, src=src, group=group)
    return ep.Comm.from_unique_id(ctx, bytes(uid.cpu().tolist()), size, rank)


class _EpMoe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, expert_ids, topk_weights, w_local, module):
        module._step += 1
        ctx.module, ctx.step, ctx.x_dtype = module, module._step, x.dtype
        ctx.save_for_backward(topk_weights, w_local)
        return module._layer.forward(x, expert_ids, topk_weights, module._local(w_local))

    @staticmethod
    def backward(ctx, dy):
        module = ctx.module
        if ctx.step != module._step:
            raise RuntimeError("ExpertParallelExperts: backward of an earlier forward; the layer keeps "
                               "only the last step's received tokens (run each forward's backward "
                               "before the next forward of the same layer)")
        topk_weights, w_local = ctx.saved_tensors
        dx, dw = module._layer.backward(dy.to(torch.bfloat16).contiguous(), topk_weights,
                                        module._local(w_local))
        dw = dw.to(w_local.dtype) if dw is not None else torch.zeros_like(w_local)
        return dx.to(ctx.x_dtype), None, None, dw, None


class ExpertParallelExperts(torch.nn.Module):
    """Routed linear experts spread over the ranks of a communicator:
    y[t] = sum_j topk_weights[t, j] * x[t] . W_{expert_ids[t, j]}^T.

    num_experts E (global), in_features K, out_features N, top_k, max_tokens (the most
    tokens one forward takes on this rank). comm: a qgmm.ep.Comm (e.g. a loopback rank,
    with CPU tensors), else ep_comm(group, device, share) is made from the torch.distributed
    process group `group`. `weight` (L, N, K) bf16 holds this rank's experts
    (`local_expert_ids`: expert e on rank e // (E / R) unless expert_rank is given).
    recipe: "bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"; out_dtype: torch.bfloat16 or
    torch.float32. plan_args go to qgmm.ep.Plan (alignment, max_rows_per_peer,
    max_recv_rows, expert_rank).

    forward(x (T, K) bf16, expert_ids (T, top_k) int32, topk_weights (T, top_k) f32/bf16)
    -> (T, N): collective, every rank calls it (and backward) in the same order. x and the
    weight get gradients; the router weights do not (qgmm_ep_moe_backward does not form
    them): pass them detached. Byte-identical to the one-device composite on all ranks'
    tokens. Eager only: torch.compile breaks the graph around it."""

    def __init__(self, num_experts, in_features, out_features, top_k, max_tokens, *, comm=None, group=None,
                 recipe="bf16", out_dtype=torch.bfloat16, device=None, share="auto", **plan_args):
        super().__init__()
        if comm is None:
            comm = ep_comm(group, device, share)
        if out_dtype not in (torch.bfloat16, torch.float32):
            raise ValueError(f"out_dtype is {out_dtype}; torch.bfloat16 or torch.float32")
        self.comm = comm
        self._layer = ep.MoeLayer(comm, num_experts, top_k, max_tokens, out_features, in_features,
                                  recipe=recipe, out_dtype="bf16" if out_dtype == torch.bfloat16 else "f32",
                                  **plan_args)
        self._step = 0
        self.recipe = recipe
        self.local_expert_ids = self._layer.local_expert_ids
        on = "cpu" if comm.ctx.backend not in ("cuda", "hip") else torch.device("cuda", comm.ctx.device)
        self.weight = torch.nn.Parameter(torch.empty(len(self.local_expert_ids), out_features, in_features,
                                                     device=on, dtype=torch.bfloat16))
        torch.nn.init.normal_(self.weight, std=in_features ** -0.5)

    def _local(self, w_local):
        return w_local if w_local.shape[0] else None

    def forward(self, x, expert_ids, topk_weights):
        if torch.is_grad_enabled() and topk_weights.requires_grad:
            raise ValueError("ExpertParallelExperts: topk_weights requires grad, but the layer gives "
                             "the router weights no gradient; pass topk_weights.detach()")
        if x.is_cuda and context_for(x) is not self.comm.ctx:
            raise RuntimeError("ExpertParallelExperts: called on another stream than its communicator's "
                               "(the current stream when it was made); make the layer on this stream")
        return _EpMoe.apply(x.contiguous(), expert_ids.to(torch.int32).contiguous(),
                            topk_weights.contiguous(), self.weight, self)

    def extra_repr(self):
        L, n, k = self.weight.shape
        return (f"rank={self.comm.rank}/{self.comm.nranks}, local_experts={self.local_expert_ids}, "
                f"in_features={k}, out_features={n}, recipe={self.recipe!r}")
