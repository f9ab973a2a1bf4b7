#!/usr/bin/env python3
"""Training throughput of our `trainer` against Hugging Face transformers' GPT2LMHeadModel trained
in PyTorch eager mode (torch.optim.AdamW, SDPA attention), on the same shapes, batch and thread
count, measured side by side in one run. Prints a table and, as its last line, one JSON object.

Both sides run warmup steps first and report the median tokens/s of the timed steps; ours is read
from the trainer's metrics.jsonl (logging_steps=1: one record per optimizer step).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CORPUS = "/usr/share/doc/python3.11/html/_sources"

# name -> model shape, batch; "default" is etc/trainer/default.yaml's model, "gpt2" HF's gpt2 (124M).
SHAPES = {
    "default": dict(n_layer=4, n_head=4, n_embd=256, n_positions=256, vocab_size=257, pdrop=0.0,
                    block=128, batch=16),
    "gpt2": dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257, pdrop=0.1,
                 block=128, batch=4),
}


def ours(trainer, shape, steps, threads, workdir, extra):
    out = os.path.join(workdir, "out")
    overrides = ",".join(f"{k}={shape[k]}" for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size"))
    overrides += ",resid_pdrop={0},embd_pdrop={0},attn_pdrop={0}".format(shape["pdrop"])
    cmd = [trainer, "--do_train", "--train_file", CORPUS, "--validation_split_percentage", "0",
           "--cache_dir", os.path.join(workdir, "..", "token-cache"), "--output_dir", out,
           "--overwrite_output_dir", "--config_overrides", overrides,
           "--block_size", str(shape["block"]), "--per_device_train_batch_size", str(shape["batch"]),
           "--max_steps", str(steps), "--logging_steps", "1", "--save_steps", "0", "--learning_rate", "3e-4",
           "--weight_decay", "0.01", "--lr_scheduler_type", "constant", "--threads", str(threads)] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f]
    return [r["tokens_per_second"] for r in records if "tokens_per_second" in r]


def hf(shape, steps, threads):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    p = shape["pdrop"]
    config = GPT2Config(vocab_size=shape["vocab_size"], n_positions=shape["n_positions"], n_embd=shape["n_embd"],
                        n_layer=shape["n_layer"], n_head=shape["n_head"], resid_pdrop=p, embd_pdrop=p, attn_pdrop=p)
    model = GPT2LMHeadModel._from_config(config, attn_implementation="sdpa")
    model.train()
    decay = [t for n, t in model.named_parameters() if not n.endswith("bias") and ".ln_" not in n and not n.startswith("transformer.ln_f")]
    no_decay = [t for n, t in model.named_parameters() if n.endswith("bias") or ".ln_" in n or n.startswith("transformer.ln_f")]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)
    ids = torch.randint(0, min(shape["vocab_size"], 257), (shape["batch"], shape["block"]))
    rates = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()
        rates.append(shape["batch"] * shape["block"] / (time.perf_counter() - start))
    return rates, sum(t.numel() for t in model.parameters())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainer", required=True, help="path to the trainer binary")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per side and shape")
    parser.add_argument("--steps", type=int, default=6, help="timed steps per side and shape")
    parser.add_argument("--shapes", default="default,gpt2")
    parser.add_argument("--trainer_args", default="", help="extra trainer flags, e.g. '--offload optimizer'")
    args = parser.parse_args()

    results = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="trainer-bench-") as tmp:
        for name in args.shapes.split(","):
            shape = SHAPES[name]
            total = args.warmup + args.steps
            workdir = os.path.join(tmp, name)
            os.makedirs(workdir)
            our_rates = ours(args.trainer, shape, total, args.threads, workdir, args.trainer_args.split())[args.warmup:]
            hf_rates, params = hf(shape, total, args.threads)
            ours_tps = statistics.median(our_rates)
            hf_tps = statistics.median(hf_rates[args.warmup:])
            results[name] = {"params": params, "block": shape["block"], "batch": shape["batch"],
                             "ours_tokens_per_s": round(ours_tps, 1), "hf_tokens_per_s": round(hf_tps, 1),
                             "ratio": round(ours_tps / hf_tps, 3)}
            rows.append((name, params, shape["block"], shape["batch"], ours_tps, hf_tps, ours_tps / hf_tps))
    print(f"threads={args.threads} warmup={args.warmup} timed_steps={args.steps} (median tokens/s per step)")
    print(f"{'shape':<9} {'params':>12} {'block':>6} {'batch':>6} {'ours tok/s':>11} {'HF tok/s':>10} {'ours/HF':>8}")
    for name, params, block, batch, o, h, r in rows:
        print(f"{name:<9} {params:>12,} {block:>6} {batch:>6} {o:>11.1f} {h:>10.1f} {r:>8.3f}")
    summary = {"threads": args.threads, "target_ratio": 1.2, **results,
               "min_ratio": round(min(r[-1] for r in rows), 3)}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
