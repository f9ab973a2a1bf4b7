"""The oracle of the hub-cache tests: transformers itself, offline.

  hub_oracle.py make DIR N_EMBD [DIR N_EMBD]...   write tiny GPT-2 models (config.json, model.safetensors)
  hub_oracle.py resolve NAME REVISION [NAME REVISION]...
      for each: AutoConfig.from_pretrained and AutoModelForCausalLM.from_pretrained(NAME,
      revision=REVISION) with HF_HUB_OFFLINE=1 in this process's environment, printing one line
      "dir=<the folder transformers read config.json from> n_embd=<the loaded model's>", or "error"
      when transformers refuses it.
"""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub reads its constants
os.environ.pop("TRANSFORMERS_CACHE", None)
os.environ["TRANSFORMERS_VERBOSITY"] = "error"

import transformers  # noqa: E402


def make(pairs):
    for directory, n_embd in pairs:
        config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=int(n_embd), vocab_size=64, n_positions=32,
                                         bos_token_id=0, eos_token_id=0)
        transformers.GPT2LMHeadModel(config).save_pretrained(directory)


def resolve(pairs):
    for name, revision in pairs:
        try:
            config_file = transformers.utils.cached_file(name, "config.json", revision=revision)
            config = transformers.AutoConfig.from_pretrained(name, revision=revision)
            model = transformers.AutoModelForCausalLM.from_pretrained(name, revision=revision)
        except OSError:
            print("error", flush=True)
            continue
        assert model.config.n_embd == config.n_embd
        print(f"dir={os.path.dirname(config_file)} n_embd={model.config.n_embd}", flush=True)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    pairs = list(zip(args[0::2], args[1::2]))
    {"make": make, "resolve": resolve}[mode](pairs)


if __name__ == "__main__":
    main()
