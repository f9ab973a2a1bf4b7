"""Hugging Face transformers' side of the trainer's HF interoperability tests.

make DIR SEED [VARIANT]
                  writes DIR/hf (a random tiny GPT2LMHeadModel via save_pretrained), DIR/hf_sharded
                  (the same in ~40 KB shards with model.safetensors.index.json), DIR/hf_legacy
                  (the same weights without the "transformer." prefix, with the old attn.bias mask
                  buffers and an explicit tied lm_head.weight) and DIR/reference.safetensors
                  (input_ids, labels, and GPT2LMHeadModel's logits and loss on them, eager attention,
                  and "grad/<name>": the loss's gradient for every parameter, dropout off).
                  Other variants write DIR/hf and the reference only, from odd-sized configs:
                  "untied"      GPT-2 (n_embd 36, vocab 97) with tie_word_embeddings false, so
                                lm_head.weight is a parameter of its own;
                  "opt"         OPTForCausalLM, pre-LN, hidden 36 (heads of 9), vocab 103, pad id 1;
                  "opt-350m"    OPTForCausalLM shaped as opt-350m: post-LN (do_layer_norm_before
                                false), word_embed_proj_dim 24 against hidden 40 (project_in/out);
                  "llama"       LlamaForCausalLM, hidden 48, 6 heads sharing 2 key/value heads,
                                intermediate 80, vocab 101, untied head;
                  "llama-mqa"   LlamaForCausalLM with one key/value head, a tied head, attention
                                and MLP biases, linear rope scaling (factor 2), rope_theta 500000;
                  "llama3"      LlamaForCausalLM with Llama 3.1's rope ("llama3": factor 8, low/high
                                frequency factors 1 and 4) scaled down to this model: original
                                context 128, so head_dim 8's wavelengths 6.3, 63, 628 and 6283 fall in
                                the kept, blended, divided and divided bands; and three EOS ids.
                  "mistral"     MistralForCausalLM, 5 heads on one key/value head, sliding_window 5
                                (the reference's 17 positions take the banded mask), untied head;
                  "qwen2"       Qwen2ForCausalLM with use_sliding_window, a window of 6 from layer 1
                                on (max_window_layers 1: layer 0 full, 1 and 2 windowed), q/k/v
                                biases, a tied head, rope_theta 1e6;
                  "qwen3"       Qwen3ForCausalLM with head_dim 12 against hidden 40 / 4 heads,
                                per-head q/k RMSNorm, attention biases, untied head;
                  "phi3"        Phi3ForCausalLM: fused qkv_proj (5 heads on one key/value head) and
                                gate_up_proj, sliding_window 6, pad id 3;
                  "gemma2"      Gemma2ForCausalLM: (1 + weight) RMSNorms around attention and MLP,
                                scaled embeddings, GeGLU, head_dim 16 against hidden 48 / 4 heads,
                                query_pre_attn_scalar 20, attention and final logits soft-capped at
                                2 and 3 (small enough to bite), windows of 5 on layers 0 and 2.
                  "gemma3"      Gemma3ForCausalLM (gemma3_text): Gemma 2's shape with (1 + weight)
                                RMSNorms over each head of q and k, no soft-caps, windows of 5 on
                                layers 0, 1 and 3, rope base 500 there and a linearly scaled (factor
                                2) base 1e5 on the global layer 2.
check DIR FILE    loads DIR with AutoModelForCausalLM.from_pretrained and compares its logits and
                  loss on FILE's input_ids/labels with FILE's logits/loss; exit 1 when they differ.
"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForCausalLM, Gemma2Config, Gemma3TextConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig, MistralConfig, OPTConfig,
                          Phi3Config, Qwen2Config, Qwen3Config)

TOLERANCE = 1e-5


def forward(model, ids, labels):
    with torch.no_grad():
        out = model(input_ids=ids, labels=labels)
    return out.logits.float(), out.loss.float()


CONFIGS = {
    "gpt2": lambda: GPT2Config(vocab_size=101, n_positions=40, n_embd=48, n_layer=3, n_head=4,
                               activation_function="gelu_new", bos_token_id=100, eos_token_id=100),
    "untied": lambda: GPT2Config(vocab_size=97, n_positions=40, n_embd=36, n_layer=2, n_head=4,
                                 tie_word_embeddings=False, activation_function="gelu_new", bos_token_id=96,
                                 eos_token_id=96),
    "opt": lambda: OPTConfig(vocab_size=103, hidden_size=36, num_hidden_layers=2, ffn_dim=52, num_attention_heads=4,
                             max_position_embeddings=40, pad_token_id=1, bos_token_id=2, eos_token_id=2),
    "opt-350m": lambda: OPTConfig(vocab_size=99, hidden_size=40, word_embed_proj_dim=24, num_hidden_layers=2,
                                  ffn_dim=56, num_attention_heads=5, max_position_embeddings=40,
                                  do_layer_norm_before=False, pad_token_id=1, bos_token_id=2, eos_token_id=2),
    "llama": lambda: LlamaConfig(vocab_size=101, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                                 num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=40),
    "llama-mqa": lambda: LlamaConfig(vocab_size=99, hidden_size=40, intermediate_size=72, num_hidden_layers=2,
                                     num_attention_heads=5, num_key_value_heads=1, max_position_embeddings=40,
                                     tie_word_embeddings=True, attention_bias=True, mlp_bias=True,
                                     rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}),
    "llama3": lambda: LlamaConfig(vocab_size=103, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                                  num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256,
                                  bos_token_id=99, eos_token_id=[100, 101, 102],
                                  rope_parameters={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 128,
                                                   "rope_theta": 10000.0}),
    "mistral": lambda: MistralConfig(vocab_size=97, hidden_size=40, intermediate_size=72, num_hidden_layers=2,
                                     num_attention_heads=5, num_key_value_heads=1, max_position_embeddings=40,
                                     sliding_window=5, bos_token_id=1, eos_token_id=2),
    "qwen2": lambda: Qwen2Config(vocab_size=101, hidden_size=48, intermediate_size=80, num_hidden_layers=3,
                                 num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=40,
                                 use_sliding_window=True, sliding_window=6, max_window_layers=1,
                                 tie_word_embeddings=True, bos_token_id=99, eos_token_id=100,
                                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "qwen3": lambda: Qwen3Config(vocab_size=103, hidden_size=40, head_dim=12, intermediate_size=72,
                                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                 max_position_embeddings=40, attention_bias=True, bos_token_id=1, eos_token_id=2),
    "phi3": lambda: Phi3Config(vocab_size=97, hidden_size=40, intermediate_size=56, num_hidden_layers=2,
                               num_attention_heads=5, num_key_value_heads=1, max_position_embeddings=40,
                               sliding_window=6, bos_token_id=1, eos_token_id=2, pad_token_id=3),
    "gemma2": lambda: Gemma2Config(vocab_size=101, hidden_size=48, intermediate_size=80, num_hidden_layers=3,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                   max_position_embeddings=40, sliding_window=5, query_pre_attn_scalar=20,
                                   attn_logit_softcapping=2.0, final_logit_softcapping=3.0, pad_token_id=0,
                                   bos_token_id=2, eos_token_id=1),
    "gemma3": lambda: Gemma3TextConfig(vocab_size=101, hidden_size=48, intermediate_size=80, num_hidden_layers=4,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                       max_position_embeddings=40, sliding_window=5, query_pre_attn_scalar=20,
                                       layer_types=["sliding_attention", "sliding_attention", "full_attention",
                                                    "sliding_attention"],
                                       rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0,
                                                                           "rope_theta": 100000.0},
                                                        "sliding_attention": {"rope_type": "default",
                                                                              "rope_theta": 500.0}},
                                       pad_token_id=0, bos_token_id=2, eos_token_id=1),
}


def make(root, seed, variant):
    torch.manual_seed(seed)
    config = CONFIGS[variant]()
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():  # every parameter non-trivial, norms and biases included
        for name, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.05)
    untied = not config.tie_word_embeddings
    assert untied == (model.lm_head.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr())
    hf_dir = os.path.join(root, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    if variant == "gpt2":
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
    ids[1, 3] = 1  # OPT's pad id (no gradient into its embedding row)
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
    if len(sys.argv) in (4, 5) and sys.argv[1] == "make" and (sys.argv[4:] or ["gpt2"])[0] in CONFIGS:
        make(sys.argv[2], int(sys.argv[3]), (sys.argv[4:] or ["gpt2"])[0])
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
