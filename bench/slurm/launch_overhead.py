#!/usr/bin/env python3
"""Launch overhead of `srun --llm-rdzv`: time from srun's start until every task holds its rank,
against a plain srun of the same task count in the same run.

Variants (each on the namespace cluster of scripts/slurm/cluster.sh, as its test user):
  plain      srun -N3 -n6 sh: each task prints SLURM_PROCID (the baseline)
  env        srun --llm-rdzv sh: each task prints RANK (plugin + rdzvd start, no join)
  rendezvous srun --llm-rdzv rdzv-test-client: each task joins rdzvd and prints its rank
A variant's time is measured to the arrival of the last task's rank line on srun's stdout.
With --before-build-dir, env and rendezvous run also with that build's plugin, rdzvd and test
client (the cluster's plugstack.conf is rewritten between runs: srun and slurmstepd read it anew
for every step), interleaved with this build's, so one run compares two versions side by side.
Prints a table of medians and, as its last line, one JSON object.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cluster_env(cluster_dir):
    env = dict(os.environ)
    for line in (cluster_dir / "env").read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    return env


def time_to_ranks(cmd, ntasks, env, cwd):
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    seen, ranked_at = set(), None
    for line in proc.stdout:
        if line.startswith("rank="):
            seen.add(line.split()[0])
            if len(seen) == ntasks:
                ranked_at = time.monotonic() - start
    _, err = proc.communicate()
    total = time.monotonic() - start
    if proc.returncode != 0 or ranked_at is None:
        raise SystemExit(f"bench: {' '.join(cmd)} failed (rc={proc.returncode}, {len(seen)} ranks): {err}")
    return ranked_at, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--before-build-dir", help="another build (e.g. of an older commit) to compare with")
    parser.add_argument("--cluster-dir", default="/run/llm-rdzv-slurm")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=6)
    args = parser.parse_args()
    if args.repetitions < 1 or args.nodes < 1 or args.tasks < args.nodes:
        parser.error("need repetitions >= 1 and tasks >= nodes >= 1")
    build = pathlib.Path(args.build_dir).resolve()
    builds = {"": build}
    if args.before_build_dir:
        builds["before "] = pathlib.Path(args.before_build_dir).resolve()
    for tree in builds.values():
        for needed in ("bin/rdzv-test-client", "bin/rdzvd", "lib/llm_rdzv.so"):
            if not (tree / needed).exists():
                parser.error(f"no {tree / needed}: build rdzvd, rdzv-test-client and the plugin there first")
    cluster_dir = pathlib.Path(args.cluster_dir)
    cluster = [str(ROOT / "scripts/slurm/cluster.sh")]
    brought_up = subprocess.run(cluster + ["status", "--dir", str(cluster_dir)], capture_output=True).returncode != 0
    if brought_up:
        subprocess.run(cluster + ["up", "--dir", str(cluster_dir), "--build-dir", str(build)], check=True)
    try:
        env = cluster_env(cluster_dir)
        user = env["LLMRDZV_TEST_USER"]
        as_user = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
        layout = [f"-N{args.nodes}", f"-n{args.tasks}"]
        plugstack = cluster_dir / "plugstack.conf"
        ours = plugstack.read_text()
        # (plugstack text, command) per variant; "before " variants run the other build.
        variants = {"plain": (ours, as_user + ["srun"] + layout + ["sh", "-c", "echo rank=$SLURM_PROCID"])}
        for label, tree in builds.items():
            conf = ours.replace(str(build), str(tree))
            variants[label + "env"] = (conf, as_user + ["srun"] + layout + ["--llm-rdzv", "sh", "-c", "echo rank=$RANK"])
            variants[label + "rendezvous"] = (conf, as_user + ["srun"] + layout + ["--llm-rdzv", str(tree / "bin/rdzv-test-client")])
        samples = {name: [] for name in variants}
        time_to_ranks(variants["plain"][1], args.tasks, env, "/tmp")  # warm caches
        try:
            for _ in range(args.repetitions):
                for name, (conf, cmd) in variants.items():  # interleaved: drift hits all variants alike
                    plugstack.write_text(conf)
                    samples[name].append(time_to_ranks(cmd, args.tasks, env, "/tmp"))
        finally:
            plugstack.write_text(ours)
    finally:
        if brought_up:
            subprocess.run(cluster + ["down", "--dir", str(cluster_dir)], check=False)

    med = {name: (statistics.median(s[0] for s in runs), statistics.median(s[1] for s in runs))
           for name, runs in samples.items()}
    base = med["plain"][0]
    print(f"srun -N{args.nodes} -n{args.tasks}, {args.repetitions} repetitions, medians")
    print(f"{'variant':<20}{'to all ranks (s)':>18}{'srun total (s)':>16}{'ratio to plain':>16}")
    for name, (ranked, total) in med.items():
        print(f"{name:<20}{ranked:>18.3f}{total:>16.3f}{ranked / base:>16.2f}")
    result = {
        "bench": "slurm_launch_overhead", "nodes": args.nodes, "tasks": args.tasks,
        "repetitions": args.repetitions,
        "plain_s": round(base, 4), "env_s": round(med["env"][0], 4),
        "rendezvous_s": round(med["rendezvous"][0], 4),
        "ratio_env": round(med["env"][0] / base, 3), "ratio_rendezvous": round(med["rendezvous"][0] / base, 3),
        "overhead_rendezvous_s": round(med["rendezvous"][0] - base, 4),
    }
    if "before rendezvous" in med:
        result["before_env_s"] = round(med["before env"][0], 4)
        result["before_rendezvous_s"] = round(med["before rendezvous"][0], 4)
        result["before_overhead_rendezvous_s"] = round(med["before rendezvous"][0] - base, 4)
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
