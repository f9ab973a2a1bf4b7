"""run_clm.py's preprocessing as the oracle of the trainer's dataset blocks.

  run_clm_oracle.py DIR BLOCK_SIZE
      DIR/corpus.jsonl (the test's rows) -> DIR/saved (DatasetDict.save_to_disk, train split),
      DIR/tokenizer-gpt2 (byte-level BPE trained on the rows, GPT-2 style: no BOS) and
      DIR/tokenizer-bos (the same with a "<s> $A" template: a BOS before every row);
      then for each tokenizer, run_clm.py's tokenize_function and group_texts maps (batched=True)
      over the train split, in one process and with num_proc=3 as --preprocessing_num_workers 3
      makes run_clm.py map, written to DIR/blocks-<tokenizer>-<num_proc>.txt, one block of ids a
      line.
"""
import os
import sys
from itertools import chain

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import datasets  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402


def make_tokenizers(rows, out):
    model = tokenizers.Tokenizer(tokenizers.models.BPE())
    model.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<s>"],
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    model.train_from_iterator(rows, trainer)
    model.post_processor = tokenizers.processors.ByteLevel(trim_offsets=False)
    plain = transformers.PreTrainedTokenizerFast(tokenizer_object=model, eos_token="<|endoftext|>",
                                                 bos_token="<|endoftext|>", unk_token="<|endoftext|>")
    plain.save_pretrained(os.path.join(out, "tokenizer-gpt2"))
    model.post_processor = tokenizers.processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    bos = transformers.PreTrainedTokenizerFast(tokenizer_object=model, eos_token="<|endoftext|>", bos_token="<s>",
                                               unk_token="<|endoftext|>")
    bos.save_pretrained(os.path.join(out, "tokenizer-bos"))


def run_clm_blocks(dataset, tokenizer, block_size, num_proc=None):
    def tokenize_function(examples):
        return tokenizer(examples["text"])

    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples}
        total_length = len(concatenated[list(examples.keys())[0]])
        total_length = (total_length // block_size) * block_size  # an empty dict for a short batch
        result = {k: [t[i: i + block_size] for i in range(0, total_length, block_size)] for k, t in concatenated.items()}
        result["labels"] = result["input_ids"].copy()
        return result

    # In memory: datasets shards a map like an earlier run's cache files when it finds any (the
    # one-process run's would make num_proc=3 map in one shard), and run_clm.py's first run has none.
    tokenized = dataset.map(tokenize_function, batched=True, num_proc=num_proc, remove_columns=dataset.column_names,
                            keep_in_memory=True)
    grouped = tokenized.map(group_texts, batched=True, num_proc=num_proc, keep_in_memory=True)
    return grouped["input_ids"]


def main():
    out, block_size = sys.argv[1], int(sys.argv[2])
    train = datasets.load_dataset("json", data_files=os.path.join(out, "corpus.jsonl"), split="train")
    datasets.DatasetDict({"train": train}).save_to_disk(os.path.join(out, "saved"))
    make_tokenizers(train["text"], out)
    for name in ("gpt2", "bos"):
        tokenizer = transformers.AutoTokenizer.from_pretrained(os.path.join(out, f"tokenizer-{name}"))
        for num_proc in (None, 3):
            with open(os.path.join(out, f"blocks-{name}-{num_proc or 1}.txt"), "w") as f:
                for block in run_clm_blocks(train, tokenizer, block_size, num_proc):
                    f.write(" ".join(map(str, block)) + "\n")


if __name__ == "__main__":
    main()
