"""A two-GPU expert-parallel MoE layer (docs/ep.md, "Two-GPU MoE layer"): one process per
GPU, experts 0-3 on GPU 0 and 4-7 on GPU 1, every rank routing its own tokens.

    QGMM_LIBRARY=build/lib/libqgmm.so QGMM_PLUGIN_PATH=build/lib PYTHONPATH=python \\
        torchrun --nproc-per-node 2 python/examples/ep_two_gpu.py
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus < 2 or "LOCAL_RANK" not in os.environ:
        sys.exit(f"ep_two_gpu.py: needs 2 CUDA GPUs and one process per GPU (torchrun --nproc-per-node 2); "
                 f"found {gpus} GPU(s){'' if 'LOCAL_RANK' in os.environ else ', not started by torchrun'}. "
                 "python/tests/test_ep.py runs the same layer on loopback ranks on the CPU.")
    import qgmm.torch as qt
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    E, K, N, T, k = 8, 2048, 4096, 8192, 2          # experts, in, out, tokens per rank, top-k
    torch.manual_seed(rank)
    # the layer's communicator: the process group's own NCCL communicator where PyTorch
    # exposes it, else one qgmm makes from a unique id broadcast through the group
    # NCCL moves whole slots: declare them near the real load (1.25x balanced routing here);
    # a step past it is refused on every rank (BadOffsetsError at synchronize)
    layer = qt.ExpertParallelExperts(E, K, N, top_k=k, max_tokens=T, recipe="fp8_rowwise",
                                     max_rows_per_peer=T * k * 5 // 8)
    router = torch.nn.Linear(K, E, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(T, K, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    topk_w, ids = router(x).float().softmax(-1).topk(k, dim=-1)
    y = layer(x, ids.int(), topk_w.detach())        # the router weights get no gradient from qgmm
    y.float().square().mean().backward()            # x.grad and layer.weight.grad (local experts)
    qt.synchronize(x)                               # raises BadOffsetsError if a step was refused
    print(f"rank {rank}: experts {layer.local_expert_ids}, y {tuple(y.shape)}, "
          f"|dW| {layer.weight.grad.float().norm():.3f}, |dx| {x.grad.float().norm():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
