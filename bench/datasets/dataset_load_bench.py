"""dataset-load-bench: the time to read a dataset's text column, the trainer's reader (Arrow C++ from
the pyarrow wheel, dataset-load-timer) against the datasets library reading the same files into the
Python strings run_clm.py's tokenize map receives (ds["text"]), measured in the same run.

  dataset-load-bench [--mb 500] [--rounds 3] [--workdir DIR]

Writes about --mb MB of text rows once (datasets.Dataset.save_to_disk, and the same rows as hub-cache
parquet shards), then alternates the two readers --rounds times per layout. Prints a table and, as
its last line, one JSON object with the medians and the ratios (datasets' time / ours).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["HF_HUB_OFFLINE"] = "1"

import datasets  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
WORDS = ["alpha", "beta", "gamma", "delta", "the", "of", "and", "caf\u00e9", "\u4e2d\u6587", "model", "token", "\n"]


def make_rows(mb):
    rng = random.Random(7)
    rows, size = [], 0
    while size < mb * 1_000_000:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(20, 400)))
        rows.append(text)
        size += len(text.encode())
    return rows


def write_layouts(rows, workdir):
    dataset = datasets.Dataset.from_dict({"text": rows})
    dataset.save_to_disk(os.path.join(workdir, "saved"), max_shard_size="200MB")
    snapshot = os.path.join(workdir, "hub", "datasets--bench--text", "snapshots", COMMIT)
    os.makedirs(os.path.join(snapshot, "data"))
    shards = max(1, len(rows) * 1 // 400_000)
    for i in range(shards):
        dataset.shard(shards, i, contiguous=True).to_parquet(
            os.path.join(snapshot, "data", f"train-{i:05d}-of-{shards:05d}.parquet"))
    os.makedirs(os.path.join(workdir, "hub", "datasets--bench--text", "refs"))
    with open(os.path.join(workdir, "hub", "datasets--bench--text", "refs", "main"), "w") as f:
        f.write(COMMIT)
    return [os.path.join(snapshot, "data", name) for name in sorted(os.listdir(os.path.join(snapshot, "data")))]


def ours(timer, name, env):
    out = subprocess.run([timer, name], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)["seconds"]


def theirs(kind, path):
    start = time.perf_counter()
    if kind == "saved":
        column = datasets.load_from_disk(path)["text"]
    else:
        column = datasets.load_dataset("parquet", data_files=path, split="train", cache_dir=tempfile.mkdtemp())["text"]
    list(column)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--timer", required=True)
    parser.add_argument("--mb", type=float, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="dataset-load-bench-")
    rows = make_rows(args.mb)
    parquet = write_layouts(rows, workdir)
    env = dict(os.environ, HF_HUB_CACHE=os.path.join(workdir, "hub"), HF_DATASETS_CACHE=os.path.join(workdir, "none"))
    results = {}
    for layout, name, path in (("save_to_disk", os.path.join(workdir, "saved"), os.path.join(workdir, "saved")),
                               ("hub parquet", "bench/text", parquet)):
        times = {"ours": [], "datasets": []}
        for _ in range(args.rounds):
            times["ours"].append(ours(args.timer, name, env))
            times["datasets"].append(theirs("saved" if layout == "save_to_disk" else "parquet", path))
        results[layout] = {side: statistics.median(t) for side, t in times.items()}
    megabytes = sum(len(r.encode()) for r in rows) / 1e6
    print(f"{'layout':14} {'ours s':>8} {'datasets s':>11} {'ratio':>6}   ({megabytes:.0f} MB of text, {len(rows)} rows)")
    for layout, r in results.items():
        print(f"{layout:14} {r['ours']:8.3f} {r['datasets']:11.3f} {r['datasets'] / r['ours']:6.2f}")
    if not args.workdir:
        shutil.rmtree(workdir)
    print(json.dumps({"megabytes": round(megabytes, 1), "rows": len(rows),
                      **{layout.replace(" ", "_"): {**r, "ratio": r["datasets"] / r["ours"]} for layout, r in results.items()}}))


if __name__ == "__main__":
    sys.exit(main())
