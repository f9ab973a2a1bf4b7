#!/usr/bin/env python3
"""The reference the tokenizer tests compare with: Hugging Face's tokenizers, through transformers.

    hf_tokenizer_oracle.py DIR CASES OUT [--train CORPUS --vocab-size N [--no-eos] [--keep-newlines]
                                          [--make KIND]] [--bos] [--resave DEST]

With --train, first builds a tokenizer trained on CORPUS into DIR. Without --make: a byte-level
BPE vocabulary (tokenizers' ByteLevelBPETokenizer, "<|endoftext|>" as its special token unless
--no-eos; line by line, or as one text with --keep-newlines so that merges of line breaks and
spaces are learned) saved as DIR/vocab.json + DIR/merges.txt. With --make KIND, a tokenizer.json +
tokenizer_config.json of that kind, as its makers ship it (see make_*; opt-raw and opt-hub-raw:
vocab.json + merges.txt + tokenizer_config.json, see write_opt_raw). Then loads DIR as a user
loads an exported model (transformers' AutoTokenizer when DIR has a tokenizer_config.json, else
GPT2TokenizerFast) and encodes every case (with the BOS its post-processor adds with --bos, HF's
default; without, add_special_tokens=False): CASES has one hex-encoded byte string per line, OUT
gets one line of space-separated ids per case, then a last line
"eos=<id> bos=<id or -1> vocab=<n> loader=<class>".

With --resave, also saves the loaded tokenizer into DEST with transformers' save_pretrained and
removes any vocab.json/merges.txt there: DEST then holds the tokenizer as transformers 5 saves it,
tokenizer.json (+ tokenizer_config.json) alone.

Byte strings that are not valid UTF-8 follow the project's documented rule, applied here
independently with Python's strict decoder: every byte of an invalid sequence is a token of its own
(the byte's symbol, or its "<0xNN>" token for SentencePiece-style BPE) and cuts the text as a
special token would, so it is encoded as a special marker token added for the purpose whose id is
then replaced by the byte's token.
"""
import argparse
import json
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


MARKER = "\U0010fffd"  # never in the test texts


def encode_bytes(tokenizer, byte_ids, data, with_bos):
    text, bad = "", []
    while data:
        try:
            text, data = text + data.decode("utf-8"), b""
        except UnicodeDecodeError as err:
            text += data[: err.start].decode("utf-8") + MARKER * (err.end - err.start)
            bad += list(data[err.start : err.end])
            data = data[err.end :]
    marker = tokenizer.convert_tokens_to_ids(MARKER)
    ids, bad = tokenizer.encode(text, add_special_tokens=with_bos), iter(bad)
    return [byte_ids[next(bad)] if i == marker else i for i in ids]


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")


def save_config(dest, **config):
    with open(os.path.join(dest, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)


def write_opt_raw(dest, lines, vocab_size, hub_form=False):
    """OPT's tokenizer before transformers re-saves it: GPT-2's byte-level BPE as vocab.json +
    merges.txt with a tokenizer_config.json naming "</s>" BOS and EOS and add_bos_token. hub_form:
    as facebook/opt-125m has it, the tokens as AddedToken objects, a special_tokens_map.json, no
    tokenizer_class (a config.json's model_type "opt" picks GPT2Tokenizer)."""
    from tokenizers import ByteLevelBPETokenizer

    os.makedirs(dest, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(lines, vocab_size=vocab_size, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
    trainer.save_model(dest)
    if not hub_form:
        save_config(dest, tokenizer_class="GPT2Tokenizer", add_bos_token=True, bos_token="</s>", eos_token="</s>",
                    unk_token="</s>", pad_token="<pad>", errors="replace", add_prefix_space=False)
        return

    def token(content, typed=True):
        return dict(content=content, single_word=False, lstrip=False, rstrip=False, normalized=True,
                    **({"__type": "AddedToken"} if typed else {}))

    save_config(dest, errors="replace", unk_token=token("</s>"), bos_token=token("</s>"), eos_token=token("</s>"),
                pad_token=token("<pad>"), add_prefix_space=False, special_tokens_map_file=None,
                name_or_path="patrickvonplaten/opt-30b", add_bos_token=True)
    with open(os.path.join(dest, "special_tokens_map.json"), "w") as f:
        json.dump({k: token(v, False) for k, v in [("bos_token", "</s>"), ("eos_token", "</s>"), ("unk_token", "</s>"),
                                                      ("pad_token", "<pad>")]}, f)
    with open(os.path.join(dest, "config.json"), "w") as f:
        json.dump({"model_type": "opt"}, f)


def make_opt(dest, lines, vocab_size):
    """OPT: its raw files (write_opt_raw, into dest + ".raw") saved by transformers 5 (the BOS
    becomes the post-processor's template "</s> $A")."""
    from transformers import AutoTokenizer

    raw = dest + ".raw"
    write_opt_raw(raw, lines, vocab_size)
    AutoTokenizer.from_pretrained(raw).save_pretrained(dest)
    for name in ("vocab.json", "merges.txt"):
        if os.path.exists(os.path.join(dest, name)):
            os.remove(os.path.join(dest, name))


def make_llama3(dest, lines, vocab_size):
    """Llama 3: its split pattern then ByteLevel without regex, ignore_merges, special tokens past
    the vocabulary, post-processor Sequence[ByteLevel, "<|begin_of_text|> $A"], saved through
    PreTrainedTokenizerFast as Meta's hub repository has it. Two words join the vocabulary without
    merges that make them, so that only ignore_merges produces them."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    def pre_tokenizer():
        return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])

    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizer()
    trained.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = json.loads(trained.to_str())["model"]
    vocab = dict(model["vocab"])
    for word in ("\u0120xyzzy", "Quux"):
        vocab.setdefault(word, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizer()
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|eot_id|>"]
    tok.add_special_tokens(specials)
    bos = tok.token_to_id(specials[0])
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=specials[0], eos_token=specials[1]).save_pretrained(dest)


def make_qwen2(dest, lines, vocab_size):
    """Qwen2 and Qwen3: NFC, their split pattern (Llama 3's with single digits) then ByteLevel
    without regex, trained that way; special tokens past the vocabulary and a non-special added
    token matched in the raw text ("<tool_call>", as Qwen2.5's has), saved through Qwen2Tokenizer
    as their hub repositories have it (tokenizer_class Qwen2Tokenizer)."""
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    trained = Tokenizer(models.BPE())
    trained.normalizer = normalizers.NFC()
    trained.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trained.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = json.loads(trained.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tok = Qwen2Tokenizer(vocab=dict(model["vocab"]), merges=merges, extra_special_tokens=["<|im_start|>", "<|im_end|>"])
    tok.add_tokens([AddedToken("<tool_call>", special=False, normalized=False)])
    tok.save_pretrained(dest)


def sentencepiece_bpe(lines, vocab_size):
    """A Llama 2-like vocabulary: <unk> <s> </s>, the 256 "<0xNN>" byte tokens, then pieces that
    start at "▁" (trained on words split before each "▁", as SentencePiece splits them)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never", split=True)
    specials = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=specials))
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]


def make_llama2(dest, lines, vocab_size, legacy):
    """Llama 2 as transformers 5 saves a LlamaTokenizer: Metaspace pre-tokenizer (prepend_scheme
    "first", or "always" with legacy), byte fallback, "<s> $A"; its tokenizer_config.json names
    LlamaTokenizer, which rebuilds the tokenizer from the vocabulary when loading."""
    from transformers import LlamaTokenizer

    vocab, merges = sentencepiece_bpe(lines, vocab_size)
    LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, legacy=legacy).save_pretrained(dest)


def make_llama2_legacy(dest, lines, vocab_size, config_class):
    """Llama 2 as older converters wrote tokenizer.json (Meta's hub repository has this form):
    normalizer Sequence[Prepend("▁"), Replace(" ", "▁")], no pre-tokenizer, unk "<unk>", "<s> $A".
    With config_class PreTrainedTokenizerFast transformers uses the file as it is; with
    LlamaTokenizer (as on the hub, legacy false) it rebuilds it with Metaspace."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors

    vocab, merges = sentencepiece_bpe(lines, vocab_size)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1)])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    os.makedirs(dest, exist_ok=True)
    tok.save(os.path.join(dest, "tokenizer.json"))
    config = dict(tokenizer_class=config_class, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    if config_class == "LlamaTokenizer":
        config.update(add_bos_token=True, add_eos_token=False, legacy=False)
    save_config(dest, **config)


def make_gemma(dest, lines, vocab_size):
    """Gemma (2 and 3): SentencePiece-style BPE with byte fallback whose normalizer turns spaces
    into "▁" and puts none before the text, "<bos> $A", special tokens past the vocabulary and a
    non-special added token matched in the raw text, saved through GemmaTokenizer as Google's hub
    repositories have it (tokenizer_class GemmaTokenizer)."""
    from tokenizers import AddedToken
    from transformers import GemmaTokenizer

    vocab, merges = sentencepiece_bpe(lines, vocab_size)
    tok = GemmaTokenizer(vocab=vocab, merges=merges, extra_special_tokens=["<start_of_turn>", "<end_of_turn>"])
    tok.add_tokens([AddedToken("<h1>", special=False, normalized=False)])
    tok.save_pretrained(dest)


def make_phi3(dest, lines, vocab_size):
    """Phi-3 as microsoft/Phi-3-mini-4k-instruct ships it: Llama 2's normalizer form read through
    LlamaTokenizer (legacy false; add_bos_token false, which transformers 5 drops beside the file's
    "<s> $A"), "<|endoftext|>" the EOS past the vocabulary, and
    chat tokens after it that take the whitespace after them along (rstrip: "<|assistant|>",
    "<|end|>", "<|user|>"), listed in tokenizer_config.json's added_tokens_decoder too; plus two
    that take the whitespace before them (lstrip), which Phi-3 has none of."""
    from tokenizers import AddedToken, Tokenizer

    make_llama2_legacy(dest, lines, vocab_size, "LlamaTokenizer")
    path = os.path.join(dest, "tokenizer.json")
    tok = Tokenizer.from_file(path)
    added = [("<|endoftext|>", False, False), ("<|assistant|>", False, True), ("<|end|>", False, True),
             ("<|user|>", False, True), ("<|placeholder1|>", True, True), ("<|placeholder2|>", True, False)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=l, rstrip=r) for t, l, r in added])
    tok.save(path)
    decoder = {}  # every added token, as the hub's file lists them (LlamaTokenizer re-adds these)
    for t, l, r in [("<unk>", False, False), ("<s>", False, False), ("</s>", False, False)] + added:
        decoder[str(tok.token_to_id(t))] = dict(content=t, lstrip=l, normalized=False, rstrip=r, single_word=False,
                                                special=True)
    save_config(dest, tokenizer_class="LlamaTokenizer", bos_token="<s>", eos_token="<|endoftext|>", unk_token="<unk>",
                pad_token="<|endoftext|>", add_bos_token=False, add_eos_token=False, legacy=False,
                added_tokens_decoder=decoder)


def make(kind, dest, lines, vocab_size):
    if kind == "opt":
        make_opt(dest, lines, vocab_size)
    elif kind in ("opt-raw", "opt-hub-raw"):
        write_opt_raw(dest, lines, vocab_size, hub_form=kind == "opt-hub-raw")
    elif kind == "llama3":
        make_llama3(dest, lines, vocab_size)
    elif kind == "qwen2":
        make_qwen2(dest, lines, vocab_size)
    elif kind == "gemma":
        make_gemma(dest, lines, vocab_size)
    elif kind == "phi3":
        make_phi3(dest, lines, vocab_size)
    elif kind in ("llama2", "llama2-always"):
        make_llama2(dest, lines, vocab_size, legacy=kind == "llama2-always")
    elif kind == "llama2-legacy":
        make_llama2_legacy(dest, lines, vocab_size, "PreTrainedTokenizerFast")
    elif kind == "llama2-hub":
        make_llama2_legacy(dest, lines, vocab_size, "LlamaTokenizer")
    else:
        raise SystemExit("unknown --make kind " + kind)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("cases")
    parser.add_argument("out")
    parser.add_argument("--train")
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--no-eos", action="store_true")
    parser.add_argument("--keep-newlines", action="store_true")
    parser.add_argument("--make")
    parser.add_argument("--bos", action="store_true")
    parser.add_argument("--resave")
    args = parser.parse_args()

    if args.train:
        from tokenizers import ByteLevelBPETokenizer

        with open(args.train, encoding="utf-8", errors="replace") as f:
            text = f.read()
            lines = [text] if args.keep_newlines else text.split("\n")
    if args.train and args.make:
        make(args.make, args.dir, lines, args.vocab_size)
    elif args.train:
        trainer = ByteLevelBPETokenizer()
        trainer.train_from_iterator(lines, vocab_size=args.vocab_size, min_frequency=2,
                                    special_tokens=[] if args.no_eos else ["<|endoftext|>"])
        os.makedirs(args.dir, exist_ok=True)
        trainer.save_model(args.dir)

    from tokenizers import AddedToken
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
    if "<0x00>" in vocab:
        byte_ids = {b: vocab["<0x%02X>" % b] for b in range(256)}
    else:
        byte_ids = {b: vocab[c] for b, c in bytes_to_unicode().items()}
    vocab_size = len(tokenizer)
    tokenizer.add_tokens([AddedToken(MARKER, special=True, normalized=False)], special_tokens=True)
    with open(args.cases) as f:
        cases = [bytes.fromhex(line) for line in f.read().split("\n")[:-1]]
    with open(args.out, "w") as f:
        for data in cases:
            f.write(" ".join(map(str, encode_bytes(tokenizer, byte_ids, data, args.bos))) + "\n")
        bos = tokenizer.bos_token_id if args.bos and tokenizer.encode("", add_special_tokens=True) else -1
        f.write("eos=%d bos=%d vocab=%d loader=%s\n" % (tokenizer.eos_token_id, bos, vocab_size, type(tokenizer).__name__))


if __name__ == "__main__":
    main()
