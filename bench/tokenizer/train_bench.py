#!/usr/bin/env python3
"""Tokenizer training time of `trainer tokenizer` against HF tokenizers' ByteLevelBPETokenizer.train
on the same corpus and settings, single-threaded and with every core, measured side by side in one
run. Prints a table and, as its last line, one JSON object.

- Ours: `trainer tokenizer --train_file CORPUS --vocab_size V --min_frequency 2 --threads T`, the
  whole process timed (starting the binary, which loads LibTorch, reading, counting, merging,
  writing the files).
- HF: ByteLevelBPETokenizer().train(files, vocab_size=V, min_frequency=2,
  special_tokens=["<|endoftext|>"]) and save_model in a fresh Python process per pass with
  RAYON_NUM_THREADS=T; only train() and save_model() are timed (not Python's start nor the import),
  which favours HF. The files are the corpus folder's, in the order the trainer reads them.
The sides alternate pass by pass (the machine may be shared); seconds are medians over --rounds
passes, the ratio (HF's time over ours: above 1 means ours is faster) the median of each pass's
ratio to the other side's pass next to it. Both sides' merges.txt must be equal, or the bench
stops with an error.
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


def corpus_files(corpus):
    if os.path.isfile(corpus):
        return [corpus]
    found = []
    for root, dirs, files in os.walk(corpus):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, f) for f in files if not f.startswith(".")]
    return sorted(found, key=os.fsencode)


def hf_pass(args):
    # RAYON_NUM_THREADS is set by the parent before this process starts.
    from tokenizers import ByteLevelBPETokenizer
    files = corpus_files(args.corpus)
    tokenizer = ByteLevelBPETokenizer()
    start = time.perf_counter()
    tokenizer.train(files, vocab_size=args.vocab_size, min_frequency=2, show_progress=False,
                    special_tokens=["<|endoftext|>"])
    os.makedirs(args.out, exist_ok=True)
    tokenizer.save_model(args.out)
    print(time.perf_counter() - start)


def run_ours(args, threads, out):
    start = time.perf_counter()
    subprocess.run([args.trainer, "tokenizer", "--train_file", args.corpus, "--vocab_size", str(args.vocab_size),
                    "--min_frequency", "2", "--threads", str(threads), "--output_dir", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def run_hf(args, threads, out):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true")
    result = subprocess.run([sys.executable, __file__, "hf-pass", "--corpus", args.corpus, "--vocab-size",
                             str(args.vocab_size), "--out", out], check=True, capture_output=True, text=True, env=env)
    return float(result.stdout.strip().splitlines()[-1])


def load():
    return os.getloadavg()[0]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "hf-pass":
        parser = argparse.ArgumentParser()
        parser.add_argument("mode")
        parser.add_argument("--corpus", required=True)
        parser.add_argument("--vocab-size", type=int, required=True)
        parser.add_argument("--out", required=True)
        hf_pass(parser.parse_args())
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trainer", required=True, help="the trainer binary")
    parser.add_argument("--corpus", default=CORPUS, help="file or folder (default: the Python 3.11 documentation)")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}", help="thread counts, comma-separated")
    args = parser.parse_args()
    size = sum(os.path.getsize(f) for f in corpus_files(args.corpus))
    results = {"corpus": args.corpus, "corpus_mb": round(size / 1e6, 2), "vocab_size": args.vocab_size, "rows": []}
    print(f"corpus {args.corpus}: {size / 1e6:.1f} MB, vocab_size {args.vocab_size}, min_frequency 2, "
          f"{args.rounds} rounds")
    print(f"{'threads':>7} {'ours s':>8} {'HF s':>8} {'HF/ours':>8} {'load':>10}")
    with tempfile.TemporaryDirectory(prefix="tokenizer-train-bench-") as tmp:
        for threads in [int(t) for t in args.threads.split(",")]:
            ours, hf, ratios, loads = [], [], [], []
            for _ in range(args.rounds):
                loads.append(load())
                ours.append(run_ours(args, threads, os.path.join(tmp, "ours")))
                hf.append(run_hf(args, threads, os.path.join(tmp, "hf")))
                ratios.append(hf[-1] / ours[-1])
                loads.append(load())
                with open(os.path.join(tmp, "ours", "merges.txt"), "rb") as a, open(os.path.join(tmp, "hf", "merges.txt"), "rb") as b:
                    if a.read() != b.read():
                        sys.exit("tokenizer-train-bench: our merges.txt differs from HF's")
            row = {"threads": threads, "ours_s": round(statistics.median(ours), 3), "hf_s": round(statistics.median(hf), 3),
                   "hf_over_ours": round(statistics.median(ratios), 2), "load": [round(min(loads), 1), round(max(loads), 1)]}
            results["rows"].append(row)
            print(f"{threads:>7} {row['ours_s']:>8.2f} {row['hf_s']:>8.2f} {row['hf_over_ours']:>7.2f}x "
                  f"{row['load'][0]:>4}-{row['load'][1]:<4}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
