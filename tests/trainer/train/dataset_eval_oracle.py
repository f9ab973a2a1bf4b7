"""transformers' evaluation loss on run_clm.py's blocks of a dataset split: the oracle of the
trainer's --dataset_name evaluation.

  dataset_eval_oracle.py MODEL_DIR SAVED_DATASET SPLIT BLOCK_SIZE
      prints the mean over the split's blocks (run_clm's tokenize and group_texts maps,
      run_clm_oracle.run_clm_blocks) of AutoModelForCausalLM's loss on each block.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "datasets"))
os.environ["HF_HUB_OFFLINE"] = "1"

import datasets  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from run_clm_oracle import run_clm_blocks  # noqa: E402


def main():
    model_dir, saved, split, block_size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    blocks = run_clm_blocks(datasets.load_from_disk(saved)[split], tokenizer, block_size)
    with torch.no_grad():
        losses = [model(input_ids=torch.tensor([b]), labels=torch.tensor([b])).loss.item() for b in blocks]
    print(f"{len(blocks)} {sum(losses) / len(losses):.10f}")


if __name__ == "__main__":
    main()
