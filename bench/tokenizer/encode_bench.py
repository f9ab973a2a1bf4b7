#!/usr/bin/env python3
"""Encode throughput of our tokenizer against Hugging Face's tokenizers (Rust) and tiktoken, one
thread each, on the same text, for a GPT-2, a Llama 3, a Llama 2, a Qwen2 (NFC) and a Gemma
tokenizer.json, measured side by side in one run. Prints a table and, as its last line, one JSON
object.

The tokenizers are made in the run by the tokenizer tests' oracle (hf_tokenizer_oracle.py: GPT-2
with --resave, so that it is a tokenizer.json; --make llama3, llama2, qwen2, gemma), trained on every other
file of the corpus (the Python 3.11 documentation); the text encoded is the other files, one
document each (MB = 10^6 bytes of UTF-8).

- Ours: tokenizer-encode-timer, a separate process per pass, Tokenizer::encode per document.
- HF: the backend tokenizer of AutoTokenizer.from_pretrained(dir) (what transformers runs),
  encode_batch_fast(documents, add_special_tokens=False) with RAYON_NUM_THREADS=1 and
  TOKENIZERS_PARALLELISM=false; its word cache is cleared before every pass.
- tiktoken: an Encoding built from the same vocabulary (ranks: the 256 bytes, then each merge's
  token in merge order, then tokens no merge makes) and split pattern, encode_ordinary per
  document. It has no SentencePiece-style BPE, so none for Llama 2. tiktoken lives in .venv-tools,
  not in the torch venv (scripts/setup.sh), so each pass is a separate process like ours: this
  script under --tiktoken-python (`encode_bench.py tiktoken-pass`), given the ranks (tiktoken's
  file format), the pattern and the documents through files in the run's temporary directory;
  building the Encoding is not timed.
Every pass starts with an empty cache and tokenizes the whole text once, as the trainer does. The
sides alternate pass by pass (the machine may be shared); MB/s are medians over --rounds passes,
ratios the median of each pass's ratio to the other side's pass next to it.
Our ids must equal HF's on every document, or the bench stops with an error; whether tiktoken's
(mapped to vocabulary ids) do too is reported.
"""
import argparse
import array
import base64
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

CORPUS = "/usr/share/doc/python3.11/html/_sources"
TOOLS_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            ".venv-tools", "bin", "python")
# kind -> (oracle arguments that make it, default vocabulary size: the real model's, a cap that
# training on the Python documentation stops short of at 29-34k tokens)
KINDS = {
    "gpt2": ([], 50257),
    "llama3": (["--make", "llama3"], 128000),
    "llama2": (["--make", "llama2"], 32000),
    "qwen2": (["--make", "qwen2"], 151643),
    "gemma": (["--make", "gemma"], 256000),
}
# GPT-2's split pattern (ByteLevel's regex), as tiktoken's gpt2 encoding has it; Llama 3's is the oracle's.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def load_oracle(path):
    spec = importlib.util.spec_from_file_location("hf_tokenizer_oracle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_split(corpus, max_mb):
    """(training text, benchmark documents): alternate files, valid UTF-8 without NUL bytes."""
    paths = sorted(os.path.join(d, f) for d, _, files in os.walk(corpus) for f in files if f.endswith(".txt"))
    train, documents, size = [], [], 0
    for i, path in enumerate(paths):
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if i % 2 == 0:
            train.append(text)
        elif not max_mb or size + len(data) <= max_mb * 1e6:
            documents.append(text)
            size += len(data)
    return "\n".join(train), documents


def make_tokenizer(oracle_path, kind, vocab_size, corpus_file, work):
    """The tokenizer directory the oracle makes for kind (tokenizer.json + tokenizer_config.json)."""
    extra, _ = KINDS[kind]
    made, saved = os.path.join(work, kind), os.path.join(work, kind + "-saved")
    cases, out = os.path.join(work, "cases"), os.path.join(work, "oracle-out")
    open(cases, "w").close()
    resave = [] if extra else ["--resave", saved]
    env = {k: v for k, v in os.environ.items() if k not in ("RAYON_NUM_THREADS", "TOKENIZERS_PARALLELISM")}
    made_by = subprocess.run([sys.executable, oracle_path, made, cases, out, "--train", corpus_file, "--vocab-size",
                              str(vocab_size)] + extra + resave, capture_output=True, text=True, env=env)
    if made_by.returncode != 0:
        raise SystemExit("tokenizer-encode-bench: the oracle could not make %s:\n%s" % (kind, made_by.stderr))
    return saved if resave else made


def tiktoken_ranks(oracle, hf):
    """tiktoken's ranks for a byte-level tokenizer (token bytes in rank order), and ranks -> our vocabulary ids."""
    saved = json.loads(hf.to_str())
    vocab, merges = saved["model"]["vocab"], saved["model"]["merges"]
    added = {t["content"] for t in saved["added_tokens"]}
    spelled = oracle.bytes_to_unicode()
    unmap = {c: b for b, c in spelled.items()}
    order = [spelled[b] for b in range(256)]
    order += ["".join(m.split(" ") if isinstance(m, str) else m) for m in merges]
    order += [t for t in sorted(vocab, key=vocab.get) if t not in added]
    seen, ranks, rank_to_id = set(), [], []
    for token in order:
        as_bytes = bytes(unmap[c] for c in token)
        if as_bytes not in seen:
            seen.add(as_bytes)
            ranks.append(as_bytes)
            rank_to_id.append(vocab[token])
    return ranks, rank_to_id


def write_ranks(path, ranks):
    """tiktoken's .tiktoken format: a line per token, its bytes in base64 and its rank."""
    with open(path, "w", encoding="ascii") as f:
        f.writelines("%s %d\n" % (base64.b64encode(token).decode("ascii"), rank) for rank, token in enumerate(ranks))


def read_ranks(path):
    with open(path, encoding="ascii") as f:
        return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in f if line.strip())}


def read_documents(path):
    """The documents file (documents separated by NUL bytes), split as tokenizer-encode-timer splits it."""
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().split("\0")


def write_ids(path, documents):
    """Per document its token count, then its ids (uint32, native byte order), as tokenizer-encode-timer writes."""
    data = array.array("I")
    for ids in documents:
        data.append(len(ids))
        data.extend(ids)
    with open(path, "wb") as f:
        data.tofile(f)


def read_ids(path, count):
    data = array.array("I")
    with open(path, "rb") as f:
        data.frombytes(f.read())
    documents, pos = [], 0
    for _ in range(count):
        n = data[pos]
        documents.append(data[pos + 1:pos + 1 + n].tolist())
        pos += 1 + n
    return documents


def tiktoken_pass(argv):
    """encode_bench.py tiktoken-pass RANKS PATTERN DOCUMENTS [--ids OUT], under .venv-tools' Python: one timed pass
    of encode_ordinary over every document, printed as one JSON line like tokenizer-encode-timer's."""
    parser = argparse.ArgumentParser(prog="encode_bench.py tiktoken-pass")
    parser.add_argument("ranks")
    parser.add_argument("pattern")
    parser.add_argument("documents")
    parser.add_argument("--ids")
    args = parser.parse_args(argv)
    import tiktoken

    with open(args.pattern, encoding="utf-8", newline="") as f:
        pattern = f.read()
    encoding = tiktoken.Encoding("bench", pat_str=pattern, mergeable_ranks=read_ranks(args.ranks), special_tokens={})
    documents = read_documents(args.documents)
    start = time.perf_counter()
    ids = [encoding.encode_ordinary(d) for d in documents]
    seconds = time.perf_counter() - start
    if args.ids:
        write_ids(args.ids, ids)
    print(json.dumps(dict(seconds=round(seconds, 6), documents=len(ids), tokens=sum(map(len, ids)))))


def first_difference(ours, theirs):
    for doc, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return "document %d, token %d: %s vs %s" % (doc, at, a[at:at + 5], b[at:at + 5])
    return None if len(ours) == len(theirs) else "document counts %d vs %d" % (len(ours), len(theirs))


def bench_kind(args, oracle, kind, tokenizer_dir, documents, megabytes, documents_file, work):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(tokenizer_dir).backend_tokenizer
    pattern = {"gpt2": GPT2_PATTERN, "llama3": oracle.LLAMA3_PATTERN}.get(kind)
    ids_file = os.path.join(work, kind + ".ids")
    if pattern:
        ranks, rank_to_id = tiktoken_ranks(oracle, hf)
        ranks_file, pattern_file = os.path.join(work, kind + ".tiktoken"), os.path.join(work, kind + ".pattern")
        write_ranks(ranks_file, ranks)
        with open(pattern_file, "w", encoding="utf-8", newline="") as f:
            f.write(pattern)
        tiktoken_ids_file = os.path.join(work, kind + ".tiktoken-ids")
        tiktoken_pass_command = [args.tiktoken_python, os.path.abspath(__file__), "tiktoken-pass", ranks_file,
                                 pattern_file, documents_file]
    seconds = {"ours": [], "hf": [], "tiktoken": []}
    checked = {}
    for r in range(args.rounds):
        run = subprocess.run([args.timer, tokenizer_dir, documents_file] + (["--ids", ids_file] if r == 0 else []),
                             check=True, capture_output=True, text=True)
        ours = json.loads(run.stdout)
        seconds["ours"].append(ours["seconds"])

        hf.model._clear_cache()
        start = time.perf_counter()
        encodings = hf.encode_batch_fast(documents, add_special_tokens=False)
        seconds["hf"].append(time.perf_counter() - start)
        if r == 0:
            hf_ids = [e.ids for e in encodings]
            difference = first_difference(read_ids(ids_file, len(documents)), hf_ids)
            if difference:
                raise SystemExit("tokenizer-encode-bench: %s: our ids differ from HF's at %s" % (kind, difference))
            checked = dict(vocab=ours["vocab"], tokens=ours["tokens"])
        del encodings

        if pattern:
            run = subprocess.run(tiktoken_pass_command + (["--ids", tiktoken_ids_file] if r == 0 else []),
                                 capture_output=True, text=True)
            if run.returncode != 0:
                raise SystemExit("tokenizer-encode-bench: %s: the tiktoken pass (%s) failed:\n%s"
                                 % (kind, args.tiktoken_python, run.stderr))
            seconds["tiktoken"].append(json.loads(run.stdout)["seconds"])
            if r == 0:
                tiktoken_ids = read_ids(tiktoken_ids_file, len(documents))
                mapped = [[rank_to_id[t] for t in doc] for doc in tiktoken_ids]
                checked["tiktoken_same_ids"] = first_difference(mapped, hf_ids) is None
    result = dict(kind=kind, **checked)
    for side, times in seconds.items():
        if times:
            result[side + "_mb_s"] = round(megabytes / statistics.median(times), 2)
    for side in ("hf", "tiktoken"):  # each pass against the other sides' pass next to it
        if seconds[side]:
            result["ours_over_" + side] = round(statistics.median(t / o for o, t in zip(seconds["ours"], seconds[side])), 3)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timer", required=True, help="tokenizer-encode-timer")
    parser.add_argument("--oracle", required=True, help="tests/trainer/tokenizer/hf_tokenizer_oracle.py")
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--mb", type=float, default=0, help="at most this much text to encode (default: all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--vocab-size", type=int, help="for every kind (default: each real model's)")
    parser.add_argument("--tiktoken-python", default=TOOLS_PYTHON,
                        help="a Python with tiktoken, for the tiktoken passes (default: the project's .venv-tools)")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if args.rounds < 1 or not kinds or any(k not in KINDS for k in kinds):
        parser.error("--rounds must be at least 1 and --kinds a list of " + ",".join(KINDS))
    if kinds != ["llama2"] and not os.access(args.tiktoken_python, os.X_OK):
        parser.error("--tiktoken-python %s is not there (scripts/setup.sh makes .venv-tools)" % args.tiktoken_python)

    oracle = load_oracle(args.oracle)
    train, documents = corpus_split(args.corpus, args.mb)
    megabytes = sum(len(d.encode("utf-8")) for d in documents) / 1e6
    results = []
    with tempfile.TemporaryDirectory(prefix="tokenizer-encode-bench-") as work:
        corpus_file, documents_file = os.path.join(work, "train.txt"), os.path.join(work, "documents")
        with open(corpus_file, "w", encoding="utf-8") as f:
            f.write(train)
        with open(documents_file, "w", encoding="utf-8", newline="") as f:
            f.write("\0".join(documents))
        for kind in kinds:
            tokenizer_dir = make_tokenizer(args.oracle, kind, args.vocab_size or KINDS[kind][1], corpus_file, work)
            results.append(bench_kind(args, oracle, kind, tokenizer_dir, documents, megabytes, documents_file, work))

    print("%d documents, %.2f MB; one thread; median of %d passes" % (len(documents), megabytes, args.rounds))
    print("%-7s %7s %9s %9s %9s %9s %11s %11s" % ("kind", "vocab", "tokens", "ours MB/s", "HF MB/s", "tiktoken",
                                                   "ours/HF", "ours/tiktoken"))
    for r in results:
        print("%-7s %7d %9d %9.2f %9.2f %9s %10.3fx %11s" % (
            r["kind"], r["vocab"], r["tokens"], r["ours_mb_s"], r["hf_mb_s"], r.get("tiktoken_mb_s", "n/a"),
            r["ours_over_hf"], "%.3fx" % r["ours_over_tiktoken"] if "ours_over_tiktoken" in r else "n/a"))
    print(json.dumps(dict(megabytes=round(megabytes, 2), documents=len(documents), rounds=args.rounds,
                          loadavg=round(os.getloadavg()[0], 2), kinds=results)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["tiktoken-pass"]:
        tiktoken_pass(sys.argv[2:])
    else:
        main()
