#!/usr/bin/env python3
"""Weak scaling of data-parallel training on this machine: global tokens/s of `trainer --nproc N`
for N = 1, 2, 4 ranks, and the share of the step time rank 0 spends blocked in communication that
backward did not hide. Prints a table and, as its last line, one JSON object.

Why it exists: issue 5 asks for the scaling benchmark. What it runs: trainer-bench's "default"
model (4 layers, n_embd 256, byte vocabulary, block 128; 3.3M parameters) with a fixed
per-device batch, so the global batch grows with N (weak scaling), for --warmup untimed plus
--steps timed steps per run, with --offload none, --offload optimizer (gradients all-reduced, then
each rank's shard sliced out), optimizer-reduce (--offload_gradient_sync reduce: each shard's
part of a bucket reduced to its owner only, ZeRO's reduce-scatter) and shard-parameters
(--shard_parameters, ZeRO-3: every block's parameters gathered before it computes, its gradient
reduce-scattered after; "vs DP" is its tokens/s over plain data parallelism's at the same rank
count, and rank 0's log line of the bytes it held, read from its live storages, is reported beside
the table). The 1-rank baseline is
`--nproc 1` (the same distributed code path, a world of one), measured in the same run; with
--offload none a plain one-process run (no --nproc) is measured too, to show what the
distributed path costs at world 1.

One torch thread per rank by default (--threads_per_rank), as if each rank had a device of its
own: then N ranks ask for N cores, and ideal weak scaling is a speedup of N while N <= cores.
This machine has 2 cores, often shared with compilers: 4 ranks oversubscribe it 2x (two
processes per core, plus Gloo's threads), so 4 ranks cannot beat 2 here, and "per core" (speedup
over the cores the ranks can use, min(cores, ranks x threads), against the baseline's) is the
column that says how much of the hardware the ranks turn into tokens/s. The numbers say what they
say about this machine, not about a cluster.

Per run (rank 0's metrics.jsonl, one record per step): tokens/s is the median over the timed
steps of global tokens / step time; step and comm times are medians of step_time_s and
comm_wait_s (the time blocked in collectives: gradient all-reduces still pending after backward,
the offload all-gather, the logged-loss all-reduce, which includes waiting for slower ranks);
comm % is total comm_wait_s / total step_time_s over the timed steps. Each configuration runs
--rounds times, interleaved with the others, and the table shows its fastest run (others' load
only slows a run down), with the load average around that run. Speedup is tokens/s over the
1-rank tokens/s of the same offload mode, efficiency is speedup / N.

Memory: while a run trains, the bench samples every rank's anonymous resident memory (RssAnon:
its heap and maps, not the libraries' pages the ranks share) every 0.2 s, and "MiB/rank" is the
largest rank's peak; "mem vs DP" is that over plain data parallelism's at the same rank count, in
the same invocation. --shape picks a larger model of trainer-bench's (gpt2: 124M parameters)
where memory, not the runtime's own 200 MiB, is what the ranks hold.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))
from trainer_bench import SHAPES, loadavg, run_trainer  # noqa: E402  (the same model and trainer flags)

PLAIN = 0  # "ranks" of the plain one-process run (no --nproc)

# Trainer flags of each --offload mode of this bench: plain data parallel; optimizer offload with
# the gradient all-reduced and sliced; and with each shard's gradient reduced to its owner only.
OFFLOAD_FLAGS = {
    "none": ["--offload", "none"],
    "optimizer": ["--offload", "optimizer", "--offload_gradient_sync", "all_reduce"],
    "optimizer-reduce": ["--offload", "optimizer", "--offload_gradient_sync", "reduce"],
    "shard-parameters": ["--offload", "none", "--shard_parameters", "true"],
}

# Rank 0's report of what --shard_parameters held (the trainer's run log, stderr).
RESIDENCY = re.compile(r"rank 0: --shard_parameters over \d+ ranks: (\d+) bytes of parameter and gradient shards and "
                       r"(\d+) bytes of optimizer state held; "
                       r"at most (\d+) bytes of whole-unit parameters and (\d+) bytes of whole-unit gradients .*"
                       r"\(the whole model: (\d+) bytes")


def status_field(pid, field):
    """A number of /proc/<pid>/status (kB), or the text of a field; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    value = line.split()[1]
                    return int(value) if value.isdigit() else value
    except OSError:
        return None
    return None


class RankMemory:
    """Samples the peak RssAnon of the trainer's ranks (trainer processes whose parent is one too:
    the launcher of --nproc, or the one-process trainer itself when no rank has a trainer parent)
    every 0.2 s while the bench runs one trainer at a time."""

    def __init__(self):
        self.peaks = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            trainers = {int(p) for p in os.listdir("/proc") if p.isdigit() and status_field(p, "Name") == "trainer"}
            ranks = {p for p in trainers if status_field(p, "PPid") in trainers} or trainers
            for pid in ranks:
                anon = status_field(pid, "RssAnon")
                if isinstance(anon, int):
                    self.peaks[pid] = max(self.peaks.get(pid, 0), anon)
            time.sleep(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def largest_mib(self):
        return round(max(self.peaks.values()) / 1024, 1) if self.peaks else None


def run_config(args, shape, offload, ranks, workdir):
    """One run of a configuration, summarised from its timed steps."""
    world = max(ranks, 1)
    extra = OFFLOAD_FLAGS[offload] + (["--nproc", str(ranks)] if ranks != PLAIN else [])
    load_before = loadavg()
    log_path = os.path.join(workdir, "trainer.log")
    with open(log_path, "w") as log, RankMemory() as memory:
        try:
            records, _ = run_trainer(args.trainer, shape, args.warmup + args.steps, args.threads_per_rank, workdir, "",
                                     extra, stderr=log)
        finally:
            with open(log_path) as text:
                log_text = text.read()
            sys.stderr.write(log_text)
    timed = records[args.warmup:]
    steps = [r["step_time_s"] for r in timed]
    waits = [r["comm_wait_s"] for r in timed]
    return {"ranks": world, "one_process": ranks == PLAIN, "threads_per_rank": args.threads_per_rank,
            "global_batch": shape["batch"] * world,
            "tokens_per_s": round(statistics.median(r["tokens_per_second"] for r in timed), 1),
            "step_ms": round(1000 * statistics.median(steps), 2),
            "comm_wait_ms": round(1000 * statistics.median(waits), 2),
            "comm_fraction": round(sum(waits) / sum(steps), 4),
            "load": [load_before, loadavg()], "peak_rank_anon_mib": memory.largest_mib(), **held_bytes(log_text)}


def held_bytes(log_text):
    """Rank 0's --shard_parameters residency, when it reported one."""
    found = RESIDENCY.search(log_text)
    if not found:
        return {}
    shards, optimizer, gathered, gradients, model = map(int, found.groups())
    return {"held_bytes": {"shards": shards, "optimizer_state": optimizer, "peak_gathered_parameters": gathered,
                           "peak_whole_unit_gradients": gradients, "whole_model_parameters": model}}


def cores_used(row):
    return min(os.cpu_count(), row["ranks"] * row["threads_per_rank"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainer", required=True, help="path to the trainer binary (rdzvd next to it)")
    parser.add_argument("--ranks", default="1,2,4", help="comma-separated rank counts; the first is the baseline")
    parser.add_argument("--offload", default="none,optimizer,optimizer-reduce",
                        help="comma-separated modes: " + ", ".join(OFFLOAD_FLAGS))
    parser.add_argument("--shape", default="default", choices=sorted(SHAPES),
                        help="trainer-bench's model shape (default: 4 layers, n_embd 256; gpt2: 124M parameters)")
    parser.add_argument("--batch", type=int, help="per-device batch (default: the shape's)")
    parser.add_argument("--threads_per_rank", type=int, default=1, help="torch threads of every rank")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per run")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per configuration, interleaved")
    args = parser.parse_args()

    shape = dict(SHAPES[args.shape])
    args.batch = args.batch or shape["batch"]
    shape["batch"] = args.batch
    for offload in args.offload.split(","):
        if offload not in OFFLOAD_FLAGS:
            parser.error(f"--offload: unknown mode '{offload}' (known: {', '.join(OFFLOAD_FLAGS)})")
    rank_counts = [int(n) for n in args.ranks.split(",")]
    configs = [(offload, ranks) for offload in args.offload.split(",")
               for ranks in ([PLAIN] if offload == "none" else []) + rank_counts]
    runs = {config: [] for config in configs}
    with tempfile.TemporaryDirectory(prefix="scaling-bench-") as workdir:
        for _ in range(args.rounds):
            for config in configs:
                runs[config].append(run_config(args, shape, *config, workdir))

    results = {}
    for (offload, ranks), done in runs.items():
        row = dict(max(done, key=lambda run: run["tokens_per_s"]), all_runs_tokens_per_s=[r["tokens_per_s"] for r in done])
        results.setdefault(offload, {})["one_process" if ranks == PLAIN else str(ranks)] = row
    for offload, rows in results.items():
        base = rows[str(rank_counts[0])]
        for key, row in rows.items():
            plain = results.get("none", {}).get(key)
            if offload != "none" and plain:
                row["vs_dp"] = round(row["tokens_per_s"] / plain["tokens_per_s"], 3)
                if row["peak_rank_anon_mib"] and plain["peak_rank_anon_mib"]:
                    row["memory_vs_dp"] = round(row["peak_rank_anon_mib"] / plain["peak_rank_anon_mib"], 3)
            row["speedup"] = round(row["tokens_per_s"] / base["tokens_per_s"], 3)
            row["efficiency"] = round(row["speedup"] * base["ranks"] / row["ranks"], 3)
            row["per_core_efficiency"] = round(row["speedup"] * cores_used(base) / cores_used(row), 3)

    config = shape["config"]
    layers, width = config.get("n_layer", config.get("num_hidden_layers")), config.get("n_embd", config.get("hidden_size"))
    print(f"cores={os.cpu_count()} model={args.shape}({layers}x{width}, block {shape['block']}) per-device batch={args.batch} "
          f"threads/rank={args.threads_per_rank} warmup={args.warmup} timed_steps={args.steps} rounds={args.rounds} "
          f"(fastest run of each; medians over its timed steps; comm % = total comm wait / total step time)")
    print(f"{'offload':<16} {'ranks':>6} {'batch':>6} {'tok/s':>9} {'speedup':>8} {'effic.':>7} {'per core':>8} "
          f"{'step ms':>8} {'comm ms':>8} {'comm %':>7} {'vs DP':>6} {'MiB/rank':>9} {'mem vs DP':>9} {'load 1m':>11}")
    for offload, rows in results.items():
        for row in rows.values():
            ranks = "1 (1p)" if row["one_process"] else str(row["ranks"])
            print(f"{offload:<16} {ranks:>6} {row['global_batch']:>6} {row['tokens_per_s']:>9.1f} "
                  f"{row['speedup']:>8.3f} {row['efficiency']:>7.3f} {row['per_core_efficiency']:>8.3f} "
                  f"{row['step_ms']:>8.1f} {row['comm_wait_ms']:>8.1f} {100 * row['comm_fraction']:>6.1f}% "
                  f"{row['vs_dp'] if 'vs_dp' in row else '':>6} {row['peak_rank_anon_mib'] or '':>9} "
                  f"{row.get('memory_vs_dp', ''):>9} {row['load'][0]:>5.2f}-{row['load'][1]:<5.2f}")
    print("(1p: plain one-process trainer, no --nproc; speedup and efficiency are against --nproc "
          f"{rank_counts[0]} of the same offload mode; vs DP: against --offload none at the same rank count; "
          "MiB/rank: the largest rank's peak anonymous resident memory, sampled)")
    for offload, rows in results.items():
        for row in rows.values():
            if "held_bytes" in row:
                held = row["held_bytes"]
                print(f"{offload} at {row['ranks']} ranks, rank 0 held (bytes, from its live storages): "
                      f"{held['shards']} of parameter and gradient shards, {held['optimizer_state']} of optimizer "
                      f"state, at most {held['peak_gathered_parameters']} "
                      f"of gathered parameters and {held['peak_whole_unit_gradients']} of whole-unit gradients at "
                      f"once; the whole model's parameters are {held['whole_model_parameters']}")
    print(json.dumps({"cores": os.cpu_count(), "shape": args.shape, "per_device_batch": args.batch, "block": shape["block"],
                      "threads_per_rank": args.threads_per_rank, "warmup": args.warmup, "timed_steps": args.steps,
                      "rounds": args.rounds, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
