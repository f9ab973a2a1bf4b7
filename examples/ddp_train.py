"""A plain PyTorch DistributedDataParallel program with nothing Slurm- or llm-rdzv-specific in it:
it is what `srun --llm-rdzv python ddp_train.py` runs (see pytorch-ddp.sbatch). It fits a small
linear model to synthetic data, each rank on its own shard, and checks at the end that all ranks
hold the same parameters (DDP's gradient all-reduce at work)."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")  # env://: MASTER_ADDR, RANK, ...
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if use_cuda else torch.device("cpu")

    torch.manual_seed(0)
    true_weight = torch.randn(16, 1)
    generator = torch.Generator().manual_seed(1000 + rank)  # a different shard per rank
    inputs = torch.randn(512, 16, generator=generator)
    targets = inputs @ true_weight

    model = DistributedDataParallel(torch.nn.Linear(16, 1, bias=False).to(device),
                                    device_ids=[device.index] if use_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(200):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs.to(device)), targets.to(device))
        loss.backward()
        optimizer.step()
    print(f"rank {rank}/{world} on {os.uname().nodename}: final loss {loss.item():.6f}", flush=True)

    weights = model.module.weight.detach().flatten().cpu()
    gathered = [torch.empty_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    if rank == 0:
        in_sync = all(torch.equal(gathered[0], w) for w in gathered)
        error = (gathered[0] - true_weight.flatten()).abs().max().item()
        print(f"world {world}: parameters {'in sync' if in_sync else 'DIFFER'} on all ranks, "
              f"max weight error {error:.2e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Gloo's worker threads free a collective's tensors a moment after it completes, and need the
    # GIL for that; if the interpreter is shutting down by then, the process aborts with "terminate
    # called without an active exception" (seen about once in 25 runs of this script with the pinned
    # PyTorch; pytorch/pytorch#179291 describes it). Leaving here, after destroy_process_group(),
    # skips the interpreter teardown that races with them.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
