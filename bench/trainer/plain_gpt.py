"""A GPT-2 written plainly in PyTorch, as a trainer-bench peer: one module of the kind people write
for speed runs (nanoGPT-style: nn.Linear and nn.LayerNorm, F.scaled_dot_product_attention with
is_causal, the LM head tied to the token embedding), usually trained under torch.compile. It
builds GPT-2's network from a transformers GPT2Config, with GPT2LMHeadModel's parameters (the same
names and count; nn.Linear's weights are the transposes of HF's Conv1D's), so trainer-bench checks it as it checks HF's model; its loss is HF's
(next-token cross-entropy in fp32 over the T-1 predicted positions of each row). The vocabulary
is the config's as it is (no padding to a multiple of 64): the same network as ours and HF's.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

# transformers' names of GPT-2's activations -> F.gelu's `approximate`.
GELU_APPROXIMATION = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu": "none"}


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.n_embd
        inner = config.n_inner or 4 * width
        self.heads = config.n_head
        self.attn_dropout = config.attn_pdrop
        self.approximate = GELU_APPROXIMATION[config.activation_function]
        self.ln_1 = nn.LayerNorm(width, eps=config.layer_norm_epsilon)
        self.attn = nn.ModuleDict(dict(c_attn=nn.Linear(width, 3 * width), c_proj=nn.Linear(width, width)))
        self.ln_2 = nn.LayerNorm(width, eps=config.layer_norm_epsilon)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(width, inner), c_proj=nn.Linear(inner, width)))
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(width, dim=2)
        q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout if self.training else 0.0,
                                           is_causal=True)
        x = x + self.resid_dropout(self.attn.c_proj(y.transpose(1, 2).reshape(batch, length, width)))
        h = F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate=self.approximate)
        return x + self.resid_dropout(self.mlp.c_proj(h))


class PlainGPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.activation_function not in GELU_APPROXIMATION:
            raise ValueError(f"plain GPT: activation {config.activation_function!r} is not one of "
                             f"{', '.join(GELU_APPROXIMATION)}")
        if not config.tie_word_embeddings:
            raise ValueError("plain GPT: only GPT-2's tied LM head")
        # Under `transformer.`, as in GPT2LMHeadModel, so that parameter names group alike.
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.n_positions, config.n_embd),
            drop=nn.Dropout(config.embd_pdrop),
            h=nn.ModuleList(Block(config) for _ in range(config.n_layer)),
            ln_f=nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)))
        # GPT-2's initialisation: N(0, 0.02), the residual projections scaled by 1/sqrt(2 n_layer).
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name:
                nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * config.n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, ids):
        """The mean next-token cross-entropy of `ids` [batch, length] (the last position predicts
        nothing), in fp32."""
        t = self.transformer
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = t.drop(t.wte(ids) + t.wpe(positions))
        for block in t.h:
            x = block(x)
        logits = F.linear(t.ln_f(x), t.wte.weight)  # the head, tied
        targets = F.pad(ids[:, 1:], (0, 1), value=-100)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
