#!/usr/bin/env python3
"""Where the profiled training steps went, from the Chrome trace `trainer --profile_steps N` writes
(<output_dir>/profile/rank-<k>.json, torch's Kineto format): so a speed question on a GPU node is
answered by one run's text output, without opening the trace in a browser.

The trace covers exactly the profiled steps (the trainer synchronises the GPU at both ends), so:
- GPU busy: the union of kernel, copy and memset intervals over the window. Far under 100% means
  the host does not feed the GPU fast enough (launch overhead, host work between kernels, syncs):
  fused kernels would not help, fewer launches (CUDA graphs) or less host work would.
- GPU time by class (GEMM, attention, normalisation, elementwise, reductions, optimizer, copies)
  and the heaviest kernels: where fused kernels would pay.
- Host syncs inside the steps (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
  blocking cudaMemcpy), not counting the trainer's own closing sync: reading the loss at logging is
  one, any other stalls the pipeline.
- CPU ops by self time (an op's time less that of the ops it called), the same on a CPU-only run.

Usage: profile_summary.py TRACE [--steps N] [--top K] [--json]. --steps divides the window into
per-step figures; --json prints one JSON object instead of the text report.
"""
import argparse
import collections
import json
import re
import sys

# Kernel classes by name, first match wins (cuBLAS/CUTLASS kernels are named sm90_xmma_gemm_...,
# nvjet_..., cutlass_...; torch's own kernels after the op they implement).
KERNEL_CLASSES = [
    ("attention", re.compile(r"flash|fmha|attention|attn|sdpa", re.I)),
    ("gemm", re.compile(r"gemm|nvjet|cutlass|xmma|cublas|sgemm|hgemm|matmul", re.I)),
    ("optimizer, foreach", re.compile(r"adam|multi_tensor|foreach", re.I)),
    ("normalisation", re.compile(r"norm|GammaBeta|welford", re.I)),
    ("reduction", re.compile(r"reduce|cub::|scan|softmax|cross_entropy|nll", re.I)),
    ("copy kernel", re.compile(r"copy|cat_|index|gather|scatter|embedding", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|gelu|dropout|fill|pointwise", re.I)),
]
SYNC_CALLS = re.compile(r"^cuda(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy)$")
HOST_CATEGORIES = ("cuda_runtime", "cuda_driver")
GPU_CATEGORIES = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "memsets"}


class TraceError(Exception):
    pass


def load_events(path):
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceError(f"{path} is not a JSON trace: {e}") from None
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise TraceError(f"{path} has no traceEvents list (not a Chrome trace written by --profile_steps)")
    complete = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if isinstance(ts, (int, float)) and isinstance(dur, (int, float)) and dur >= 0:
            complete.append(e)
    if not complete:
        raise TraceError(f"{path} records no timed events")
    return complete


def kernel_class(name):
    for label, pattern in KERNEL_CLASSES:
        if pattern.search(name):
            return label
    return "other"


def union_length(intervals):
    """Total length covered by [start, end) intervals, and the gaps between them as lengths."""
    covered, gaps, end = 0.0, [], None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            if end is not None:
                gaps.append(start - end)
            covered += stop - start
            end = stop
        elif stop > end:
            covered += stop - end
            end = stop
    return covered, gaps


def self_times(cpu_ops):
    """Each op's duration less that of the ops nested in it on the same thread."""
    per_thread = collections.defaultdict(list)
    for e in cpu_ops:
        per_thread[(e.get("pid"), e.get("tid"))].append(e)
    self_us, calls = collections.Counter(), collections.Counter()
    for ops in per_thread.values():
        ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in ops:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                self_us[stack[-1]["name"]] -= e["dur"]
            self_us[e["name"]] += e["dur"]
            calls[e["name"]] += 1
            stack.append(e)
    return self_us, calls


def summarise(events, steps, top):
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    window = end - start
    gpu = [e for e in events if e.get("cat") in GPU_CATEGORIES]
    report = {"window_ms": window / 1e3, "steps": steps, "per_step_ms": window / 1e3 / steps}
    if gpu:
        busy, gaps = union_length((e["ts"], e["ts"] + e["dur"]) for e in gpu)
        by_category = collections.Counter()
        for e in gpu:
            by_category[GPU_CATEGORIES[e["cat"]]] += e["dur"]
        kernels = [e for e in gpu if e["cat"] == "kernel"]
        by_class, by_kernel, kernel_calls = collections.Counter(), collections.Counter(), collections.Counter()
        for e in kernels:
            by_class[kernel_class(e["name"])] += e["dur"]
            by_kernel[e["name"]] += e["dur"]
            kernel_calls[e["name"]] += 1
        by_class["memcpy/memset"] = by_category["copies"] + by_category["memsets"]
        gpu_total = sum(by_class.values()) or 1.0
        # The trainer's closing synchronisation (it waits for the last kernel) is part of the window;
        # a sync that returns before the GPU's last work ends is one inside a step.
        gpu_end = max(e["ts"] + e["dur"] for e in gpu)
        syncs = sorted((e for e in events if e.get("cat") in HOST_CATEGORIES and SYNC_CALLS.match(e["name"])
                        and e["ts"] + e["dur"] < gpu_end), key=lambda e: e["ts"])
        launches = sum(1 for e in events if e.get("cat") in HOST_CATEGORIES and "Launch" in e["name"])
        report["gpu"] = {
            "busy_ms": busy / 1e3,
            "busy_share": busy / window,
            "kernels": len(kernels),
            "launches": launches,
            "idle_gaps_over_50us": sum(1 for g in gaps if g > 50),
            "idle_in_gaps_over_50us_ms": sum(g for g in gaps if g > 50) / 1e3,
            "by_class": {k: {"ms": v / 1e3, "share": v / gpu_total} for k, v in by_class.most_common() if v > 0},
            "top_kernels": [{"name": n, "calls": kernel_calls[n], "ms": v / 1e3, "share": v / gpu_total}
                            for n, v in by_kernel.most_common(top)],
            "host_syncs_in_steps": [{"name": e["name"], "ms": e["dur"] / 1e3} for e in syncs],
        }
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op"]
    self_us, calls = self_times(cpu_ops)
    report["cpu"] = {
        "ops": len(cpu_ops),
        "self_ms": sum(self_us.values()) / 1e3,
        "top_ops": [{"name": n, "calls": calls[n], "ms": v / 1e3} for n, v in self_us.most_common(top)],
    }
    return report


def shorten(name, width=88):
    return name if len(name) <= width else name[: width - 3] + "..."


def print_text(report, out):
    w = out.write
    w(f"window {report['window_ms']:.1f} ms over {report['steps']} step(s): {report['per_step_ms']:.1f} ms per step\n")
    gpu = report.get("gpu")
    if gpu:
        w(f"GPU busy {gpu['busy_ms']:.1f} ms = {100 * gpu['busy_share']:.1f}% of the window; "
          f"{gpu['kernels']} kernels from {gpu['launches']} launches; "
          f"{gpu['idle_gaps_over_50us']} idle gaps over 50 us, {gpu['idle_in_gaps_over_50us_ms']:.1f} ms in all\n")
        syncs = gpu["host_syncs_in_steps"]
        w(f"host syncs inside the steps: {len(syncs)}"
          + (" (" + ", ".join(f"{s['name']} {s['ms']:.2f} ms" for s in syncs[:8]) + ")" if syncs else "") + "\n")
        w("GPU time by class:\n")
        for label, v in gpu["by_class"].items():
            w(f"  {label:<14} {v['ms']:9.2f} ms {100 * v['share']:5.1f}%\n")
        w("heaviest kernels:\n")
        for k in gpu["top_kernels"]:
            w(f"  {k['ms']:9.2f} ms {100 * k['share']:5.1f}% {k['calls']:6d}x  {shorten(k['name'])}\n")
    cpu = report["cpu"]
    w(f"CPU ops: {cpu['ops']} calls, {cpu['self_ms']:.1f} ms of self time (all threads); heaviest by self time:\n")
    for op in cpu["top_ops"]:
        w(f"  {op['ms']:9.2f} ms {op['calls']:6d}x  {shorten(op['name'])}\n")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a trace written by trainer --profile_steps (<output_dir>/profile/rank-<k>.json)")
    parser.add_argument("--steps", type=int, default=1, help="how many steps the trace holds (its --profile_steps)")
    parser.add_argument("--top", type=int, default=20, help="how many kernels and CPU ops to list")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.top < 1:
        parser.error("--steps and --top must be at least 1")
    try:
        report = summarise(load_events(args.trace), args.steps, args.top)
    except TraceError as e:
        print(f"profile_summary: {e}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_text(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
