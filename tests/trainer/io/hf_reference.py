"""Hugging Face transformers' side of the trainer's HF interoperability tests.

make DIR SEED [untied]
                  writes DIR/hf (a random tiny GPT2LMHeadModel via save_pretrained), DIR/hf_sharded
                  (the same in ~40 KB shards with model.safetensors.index.json), DIR/hf_legacy
                  (the same weights without the "transformer." prefix, with the old attn.bias mask
                  buffers and an explicit tied lm_head.weight) and DIR/reference.safetensors
                  (input_ids, labels, and GPT2LMHeadModel's logits and loss on them, eager attention,
                  and "grad/<name>": the loss's gradient for every parameter, dropout off).
                  With "untied": an odd-sized config (n_embd 36, vocab 97) with tie_word_embeddings
                  false, so lm_head.weight is a parameter of its own; DIR/hf and the reference only.
check DIR FILE    loads DIR with AutoModelForCausalLM.from_pretrained and compares its logits and
                  loss on FILE's input_ids/labels with FILE's logits/loss; exit 1 when they differ.
"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel

TOLERANCE = 1e-5


def forward(model, ids, labels):
    with torch.no_grad():
        out = model(input_ids=ids, labels=labels)
    return out.logits.float(), out.loss.float()


def make(root, seed, untied):
    torch.manual_seed(seed)
    if untied:
        config = GPT2Config(vocab_size=97, n_positions=40, n_embd=36, n_layer=2, n_head=4, tie_word_embeddings=False,
                            activation_function="gelu_new", bos_token_id=96, eos_token_id=96)
    else:
        config = GPT2Config(vocab_size=101, n_positions=40, n_embd=48, n_layer=3, n_head=4,
                            activation_function="gelu_new", bos_token_id=100, eos_token_id=100)
    model = GPT2LMHeadModel._from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():  # every parameter non-trivial, LayerNorms and biases included
        for name, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.05)
    assert untied == (model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr())
    hf_dir = os.path.join(root, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    if not untied:
        write_layout_variants(root, model, config)
    write_reference(root, model, config)


def write_layout_variants(root, model, config):
    model.save_pretrained(os.path.join(root, "hf_sharded"), safe_serialization=True, max_shard_size="40KB")
    legacy = {}
    for name, tensor in model.state_dict().items():
        legacy[name.removeprefix("transformer.")] = tensor.contiguous().clone()
    for i in range(config.n_layer):
        legacy[f"h.{i}.attn.bias"] = torch.tril(torch.ones(40, 40)).view(1, 1, 40, 40)
    legacy_dir = os.path.join(root, "hf_legacy")
    os.makedirs(legacy_dir)
    save_file(legacy, os.path.join(legacy_dir, "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(legacy_dir)


def write_reference(root, model, config):
    ids = torch.randint(0, config.vocab_size, (3, 17))
    labels = ids.clone()
    labels[0, 5:9] = -100
    labels[2, -1] = -100
    logits, loss = forward(model, ids, labels)
    reference = {"input_ids": ids, "labels": labels, "logits": logits, "loss": loss.reshape(1)}
    model.zero_grad()
    model(input_ids=ids, labels=labels).loss.backward()  # eval mode: no dropout
    for name, p in model.named_parameters():  # a tied lm_head is wte: listed once
        reference["grad/" + name] = p.grad.detach().clone().contiguous()
    save_file(reference, os.path.join(root, "reference.safetensors"))


def check(model_dir, reference_file):
    ref = load_file(reference_file)
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    logits, loss = forward(model, ref["input_ids"], ref["labels"])
    logit_diff = (logits - ref["logits"]).abs().max().item()
    loss_diff = abs(loss.item() - ref["loss"].item())
    print(f"max |logits diff| = {logit_diff:.3g}, |loss diff| = {loss_diff:.3g}")
    return 0 if logit_diff <= TOLERANCE and loss_diff <= TOLERANCE else 1


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "make" and sys.argv[4:] in ([], ["untied"]):
        make(sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["untied"])
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
