# A stock PyTorch program: env:// initialisation from the variables llm-rdzv sets, gloo, one
# all-reduce. No torchrun. Prints "allreduce rank=R world=W sum=S".
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value, op=dist.ReduceOp.SUM)
print(f"allreduce rank={rank} world={world} sum={value.item():g}", flush=True)
dist.destroy_process_group()
