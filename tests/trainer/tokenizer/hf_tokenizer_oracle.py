#!/usr/bin/env python3
"""The reference the tokenizer tests compare with: Hugging Face's GPT-2 tokenizer.

    hf_tokenizer_oracle.py DIR CASES OUT [--train CORPUS --vocab-size N [--no-eos] [--keep-newlines]]
                           [--resave DEST]

With --train, first trains a byte-level BPE vocabulary on CORPUS (tokenizers'
ByteLevelBPETokenizer, "<|endoftext|>" as its special token unless --no-eos; line by line, or as
one text with --keep-newlines so that merges of line breaks and spaces are learned) and saves
DIR/vocab.json + DIR/merges.txt. Then loads DIR as a user loads an exported model (transformers'
AutoTokenizer when DIR has a tokenizer_config.json, else GPT2TokenizerFast) and encodes every
case: CASES has one hex-encoded byte string per line, OUT gets one line of space-separated ids per
case, then a last line "eos=<id> vocab=<n> loader=<class>".

With --resave, also saves the loaded tokenizer into DEST with transformers' save_pretrained and
removes any vocab.json/merges.txt there: DEST then holds the tokenizer as transformers 5 saves it,
tokenizer.json (+ tokenizer_config.json) alone.

Byte strings that are not valid UTF-8 follow the project's documented rule, applied here
independently with Python's strict decoder: the valid runs are encoded as separate texts and
every byte of an invalid sequence becomes the token of its byte symbol.
"""
import argparse
import os


def bytes_to_unicode():
    # GPT-2's byte map, restated from its definition (printable Latin-1 to itself, the rest to 256+).
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    mapping, extra = {}, 0
    for b in range(256):
        if b in keep:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def encode_bytes(tokenizer, byte_ids, data):
    ids = []
    while data:
        try:
            text, bad, data = data.decode("utf-8"), b"", b""
        except UnicodeDecodeError as err:
            text, bad, data = data[: err.start].decode("utf-8"), data[err.start : err.end], data[err.end :]
        if text:
            ids += tokenizer.encode(text, add_special_tokens=False)
        ids += [byte_ids[b] for b in bad]
    return ids


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("cases")
    parser.add_argument("out")
    parser.add_argument("--train")
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--no-eos", action="store_true")
    parser.add_argument("--keep-newlines", action="store_true")
    parser.add_argument("--resave")
    args = parser.parse_args()

    if args.train:
        from tokenizers import ByteLevelBPETokenizer

        with open(args.train, encoding="utf-8", errors="replace") as f:
            text = f.read()
            lines = [text] if args.keep_newlines else text.split("\n")
        trainer = ByteLevelBPETokenizer()
        trainer.train_from_iterator(lines, vocab_size=args.vocab_size, min_frequency=2,
                                    special_tokens=[] if args.no_eos else ["<|endoftext|>"])
        os.makedirs(args.dir, exist_ok=True)
        trainer.save_model(args.dir)

    from transformers import AutoTokenizer, GPT2TokenizerFast

    if os.path.exists(os.path.join(args.dir, "tokenizer_config.json")):
        tokenizer = AutoTokenizer.from_pretrained(args.dir)
    else:
        tokenizer = GPT2TokenizerFast.from_pretrained(args.dir)
    if args.resave:
        tokenizer.save_pretrained(args.resave)
        for name in ("vocab.json", "merges.txt"):
            if os.path.exists(os.path.join(args.resave, name)):
                os.remove(os.path.join(args.resave, name))
    vocab = tokenizer.get_vocab()
    byte_ids = {b: vocab[c] for b, c in bytes_to_unicode().items()}
    with open(args.cases) as f:
        cases = [bytes.fromhex(line) for line in f.read().split("\n")[:-1]]
    with open(args.out, "w") as f:
        for data in cases:
            f.write(" ".join(map(str, encode_bytes(tokenizer, byte_ids, data))) + "\n")
        f.write("eos=%d vocab=%d loader=%s\n" % (tokenizer.eos_token_id, len(tokenizer), type(tokenizer).__name__))


if __name__ == "__main__":
    main()
