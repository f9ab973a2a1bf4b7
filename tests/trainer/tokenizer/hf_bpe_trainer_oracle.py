#!/usr/bin/env python3
"""The reference `trainer tokenizer` is compared with: HF tokenizers' ByteLevelBPETokenizer.train.

    hf_bpe_trainer_oracle.py OUT_DIR --vocab-size N --min-frequency K [--special TOKEN]... INPUT...

Trains a byte-level BPE on the INPUT files, in order, and saves OUT_DIR/vocab.json and
OUT_DIR/merges.txt with save_model. Plain text files go to ByteLevelBPETokenizer.train(files), which
reads each file line by line; when an INPUT is a .jsonl file, every input is fed through
train_from_iterator instead, as the same sequences: each text file's lines and each JSON Lines
record's "text" cut after every "\\n" (the ending kept), which is how `trainer tokenizer` feeds a
document. RAYON_NUM_THREADS is left to the caller.
"""
import argparse
import json
import os

from tokenizers import ByteLevelBPETokenizer


def lines_of(text):
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def sequences(paths):
    for path in paths:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8")
        if path.endswith(".jsonl"):
            for raw in data.split("\n"):
                if raw.strip(" \t\r"):
                    yield from lines_of(json.loads(raw)["text"])
        else:
            yield from lines_of(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--min-frequency", type=int, required=True)
    parser.add_argument("--special", action="append", default=[])
    args = parser.parse_args()
    tokenizer = ByteLevelBPETokenizer()
    settings = dict(vocab_size=args.vocab_size, min_frequency=args.min_frequency, show_progress=False,
                    special_tokens=args.special)
    if any(p.endswith(".jsonl") for p in args.inputs):
        tokenizer.train_from_iterator(sequences(args.inputs), **settings)
    else:
        tokenizer.train(args.inputs, **settings)
    os.makedirs(args.out_dir, exist_ok=True)
    tokenizer.save_model(args.out_dir)


if __name__ == "__main__":
    main()
