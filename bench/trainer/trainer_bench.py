#!/usr/bin/env python3
"""Training throughput of our `trainer` against its peers in PyTorch, measured side by side in one
run on the same shapes, batch and thread count: Hugging Face transformers' model of the same family
(GPT2LMHeadModel, OPTForCausalLM, LlamaForCausalLM; SDPA attention, torch.optim.AdamW) in eager
mode or under torch.compile, and for GPT-2 shapes a GPT-2 written plainly in PyTorch, the kind of
module speed runs use (plain_gpt.py), likewise. Prints a table and, as its last line, one JSON object.

What both sides do per timed step, and nothing else: take the next batch, forward with the loss
(HF's shifted causal-LM cross-entropy, fp32), backward, clip the global gradient norm to 1.0, AdamW
(weight decay 0.01 except biases and LayerNorm/RMSNorm weights), drop the gradients, read the loss
as a Python/C++ number. Same model config (checked: our saved config.json and parameter count
against HF's config and the peer's count), same dropout, same torch thread count.

- Ours: the trainer binary with logging_steps=1; its metrics.jsonl holds one tokens/s per optimizer
  step, timed from one record to the next (so it includes fetching the batch from the
  memory-mapped token cache; it excludes tokenising, which is done once into the cache before the
  first step). On a GPU the trainer writes a logging step's record once the next step's forward
  and backward are queued, so the intervals are shifted by part of a step but still tile the loop.
- A peer: a separate Python process (like ours, so both start cold); batches are made before the
  loop and indexed inside the timed region. The optimizer is what transformers' Trainer picks by default
  with this torch (>= 2.8: "adamw_torch_fused", i.e. torch.optim.AdamW(fused=True)); --peer_optim
  chooses another. The activation is the config's: GPT-2's "gelu_new", which transformers computes
  as separate eager ops (pow, mul, tanh, ...) where ours calls the fused at::gelu(approximate="tanh"),
  the same formula; --activation gelu_pytorch_tanh makes HF fuse it too. Python's
  stock glibc malloc unless --peer_same_malloc (our trainer keeps freed memory instead of unmapping it).

With --compare_trainer_args ARGS the other side is our trainer again, with ARGS added (e.g.
"--report_to none" to measure what TensorBoard logging costs; NAME=value words set the trainer's
environment, e.g. "LLMRDZV_CUDA_KERNELS=0"): the figure is then each side's tokens over the wall
time of its timed steps taken together (the step loop after the warmup, logging included), so work
one step leaves for the next (delayed offload updates) is counted, and start-up is not.

With --device cuda both sides train on the GPU in bf16 mixed precision (ours: its default there,
bf16 compute with fp32 master weights; a peer: torch.autocast(bfloat16) over fp32 parameters, as
the HF Trainer's --bf16 does), against HF eager, HF + torch.compile and the plain GPT-2 +
torch.compile by default (--peers). The table adds
each side's MFU (6 x parameters x tokens/s over --peak_tflops, 989 for an H100's dense bf16) and its
peak GPU memory: the most nvidia-smi reported in use during the segment, less what was in use before
it (the same measure for every side, the CUDA context included).

The machine may be shared, so the sides alternate in --rounds segments (ours, peer, ours, peer, ...),
each a fresh process running --warmup untimed then --steps timed steps; a side's figure is the
median over all its timed steps, and the load average is recorded around every segment. On a
virtual machine the hypervisor may also run other guests on this one's cores: the "steal" column
is the share of the machine's CPU time (all cores, idle included) taken that way during each
side's segments (/proc/stat), so a ratio skewed by it shows as such; on a host with more cores
than --threads it understates what the measured threads lost.

A shape may train several micro-batches per optimizer step (the "micro" column; both sides
accumulate their gradients over them, then clip and step once), and its tokens/s counts them all.
`--peers none` runs ours alone (the gpt2-6.7b-8x1024x16 shape, whose peers would not fit in the
memory of one GPU). The table's "host GiB" is our trainer process's peak resident memory.

With --profile_dir DIR, our trainer then trains each shape once more with --profile_steps 3 (steps
2-4 of a fresh process): the trace goes to DIR/<shape>.json and its summary (profile_summary.py:
GPU busy share, kernel classes, host syncs, CPU ops) is printed before the table.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import profile_summary

# Our side's training text (byte-level tokenizer): Python's docs where the machine has them, else a
# generated word corpus of the same size (a GPU host may have neither Debian's docs nor a network).
CORPUS = "/usr/share/doc/python3.11/html/_sources"

# name -> family (our preset of it, HF's config class), config.json keys (the same names on both
# sides), block, batch and micro-batches per optimizer step (1 where not given). "default" is etc/trainer/default.yaml's model, "gpt2" HF's gpt2 (124M),
# "opt-125m" facebook/opt-125m's shape, "smollm-135m" a Llama of that size (HuggingFaceTB's
# SmolLM-135M: 30 layers, 9 heads on 3 key/value heads); Qwen2.5 and Gemma 3 below.
def _gpt2(pdrop, **shape):
    return dict(shape, resid_pdrop=pdrop, embd_pdrop=pdrop, attn_pdrop=pdrop)


SHAPES = {
    "default": dict(family="gpt2", preset="gpt2", block=128, batch=16,
                    config=_gpt2(0.0, n_layer=4, n_head=4, n_embd=256, n_positions=128, vocab_size=257)),
    "gpt2": dict(family="gpt2", preset="gpt2", block=128, batch=4,
                 config=_gpt2(0.1, n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)),
    # issue 14's speed shape: GPT-2 124M at batch 16 x block 1024, no dropout (for --device cuda).
    "gpt2-16x1024": dict(family="gpt2", preset="gpt2", block=1024, batch=16,
                         config=_gpt2(0.0, n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)),
    # and GPT-2 XL (1.5B) at batch 8 x block 1024, for the MFU target at that size: one micro-batch
    # per optimizer step, and four (32 sequences per step; GPT-2 itself trained with 512), where
    # AdamW's pass over 1.5B parameters (~47 GB of memory traffic) weighs a quarter as much per token.
    "gpt2-xl-8x1024": dict(family="gpt2", preset="gpt2-xl", block=1024, batch=8,
                           config=_gpt2(0.0, n_layer=48, n_head=25, n_embd=1600, n_positions=1024, vocab_size=50257)),
    "gpt2-xl-8x1024x4": dict(family="gpt2", preset="gpt2-xl", block=1024, batch=8, micro=4,
                             config=_gpt2(0.0, n_layer=48, n_head=25, n_embd=1600, n_positions=1024,
                                          vocab_size=50257)),
    # issue 14's offload goal: a GPT-2-shaped 6.65B model on one GPU, 16 micro-batches per step
    # (with --peers none and --trainer_args "--offload optimizer --gradient_checkpointing").
    "gpt2-6.7b-8x1024x16": dict(family="gpt2", preset="gpt2", block=1024, batch=8, micro=16,
                                config=_gpt2(0.0, n_layer=32, n_head=32, n_embd=4096, n_positions=1024,
                                             vocab_size=50304)),
    "opt-125m": dict(family="opt", preset="opt-125m", block=128, batch=4,
                     config=dict(num_hidden_layers=12, num_attention_heads=12, hidden_size=768, ffn_dim=3072,
                                 word_embed_proj_dim=768, max_position_embeddings=2048, vocab_size=50272,
                                 dropout=0.1, attention_dropout=0.0)),
    "smollm-135m": dict(family="llama", preset="smollm-135m", block=128, batch=4,
                        config=dict(num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                                    hidden_size=576, intermediate_size=1536, max_position_embeddings=2048,
                                    vocab_size=49152, tie_word_embeddings=True)),
    # Qwen/Qwen2.5-0.5B's shape (24 layers, 14 heads on 2 key/value heads, q/k/v biases, a tied
    # 151936-token head), and a Gemma 3 of about GPT-2's size: (1 + weight) norms around attention
    # and MLP, q/k norms, 4 heads of 256 on one key/value head, GeGLU, five local layers to one global.
    "qwen2.5-0.5b": dict(family="qwen2", preset="qwen2.5-0.5b", block=128, batch=4,
                         config=dict(num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                                     hidden_size=896, intermediate_size=4864, max_position_embeddings=32768,
                                     vocab_size=151936, tie_word_embeddings=True)),
    "gemma3-150m": dict(family="gemma3_text", preset="gemma-3-1b", block=128, batch=4,
                        config=dict(num_hidden_layers=12, num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                                    hidden_size=768, intermediate_size=3072, max_position_embeddings=2048,
                                    vocab_size=32000, sliding_window=512, tie_word_embeddings=True)),
}
LEARNING_RATE = 3e-4


def micro_batches(shape):
    return shape.get("micro", 1)


def tokens_per_step(shape):
    return shape["block"] * shape["batch"] * micro_batches(shape)
WEIGHT_DECAY = 0.01
MAX_GRAD_NORM = 1.0


def loadavg():
    return round(os.getloadavg()[0], 2)


class CpuSteal:
    """Accumulates, over the `with` blocks it is used in, the CPU time the hypervisor gave to other
    guests ("steal" in /proc/stat) and the CPU time that passed; `share` is their ratio (0 on bare
    metal, or where /proc/stat has no steal field)."""

    def __init__(self):
        self.stolen = self.total = 0

    @staticmethod
    def _read():
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return 0, 0
        # user nice system idle iowait irq softirq steal [guest guest_nice: already inside user/nice]
        return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])

    def __enter__(self):
        self.start = self._read()
        return self

    def __exit__(self, *exc):
        stolen, total = self._read()
        self.stolen += stolen - self.start[0]
        self.total += total - self.start[1]
        return False

    @property
    def share(self):
        return self.stolen / self.total if self.total else 0.0


def safetensors_numel(path):
    """Elements in a .safetensors file, from its JSON header alone."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    total = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        n = 1
        for d in info["shape"]:
            n *= d
        total += n
    return total


def corpus_path(workdir):
    """CORPUS, or where it is missing a generated text of ~8 MB in workdir's parent."""
    if os.path.isdir(CORPUS):
        return CORPUS
    path = os.path.join(os.path.dirname(workdir), "corpus.txt")
    if not os.path.exists(path):
        rng = random.Random(0)
        words = ["".join(rng.choice("etaoinshrdlucmfwypvbgk") for _ in range(rng.randint(2, 9))) for _ in range(4000)]
        with open(path, "w") as f:
            for _ in range(20000):
                f.write(" ".join(rng.choice(words) for _ in range(70)) + ".\n")
    return path


class GpuMemoryPeak:
    """The most GPU memory in use (GiB, nvidia-smi, every 100 ms) during a `with` block, less the
    amount in use when it began; None without CUDA."""

    def __init__(self, device):
        self.device, self.peak = device, None

    def _used(self):
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    def __enter__(self):
        if self.device == "cuda":
            self.base = self._used()
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                          "-i", "0", "-lms", "100"], stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            self.proc.terminate()
            samples = [int(x) for x in self.proc.communicate()[0].split()]
            self.peak = (max(samples, default=self.base) - self.base) / 1024
        return False


# An environment assignment among --trainer_args / --compare_trainer_args, e.g. LLMRDZV_CUDA_KERNELS=0.
ENV_TOKEN = re.compile(r"[A-Z_][A-Z0-9_]*=.*")


# The peak resident memory of the last trainer process run_trainer ran (GiB).
last_host_peak_gib = 0.0


def run_trainer(trainer, shape, steps, threads, workdir, activation, extra, stderr=None):
    """Trains `steps` steps of `shape` (logging every step, no checkpoints) in workdir/out; returns
    metrics.jsonl's training records (one per step) and the output directory, and leaves the
    process's peak resident memory in last_host_peak_gib. `stderr`: a file for the trainer's log
    (the bench's own stderr by default)."""
    out = os.path.join(workdir, "out")
    overrides = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in shape["config"].items())
    if activation:
        overrides += f",{ACTIVATION_KEY[shape['family']]}={activation}"
    cmd = [trainer, "--do_train", "--train_file", corpus_path(workdir), "--validation_split_percentage", "0",
           "--token_cache_dir", os.path.join(workdir, "token-cache"), "--output_dir", out,
           "--overwrite_output_dir", "--config_name", shape["preset"], "--config_overrides", overrides,
           "--block_size", str(shape["block"]), "--per_device_train_batch_size", str(shape["batch"]),
           "--max_steps", str(steps), "--logging_steps", "1", "--save_steps", "0",
           "--learning_rate", str(LEARNING_RATE), "--weight_decay", str(WEIGHT_DECAY),
           "--max_grad_norm", str(MAX_GRAD_NORM), "--lr_scheduler_type", "constant",
           "--gradient_accumulation_steps", str(micro_batches(shape)), "--threads", str(threads)] + extra
    env = dict(os.environ)
    for token in [t for t in cmd if ENV_TOKEN.fullmatch(t)]:  # NAME=value: the trainer's environment
        cmd.remove(token)
        name, value = token.split("=", 1)
        env[name] = value
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, cmd)
    with open(os.path.join(out, "metrics.jsonl")) as f:
        records = [r for r in map(json.loads, f) if "tokens_per_second" in r]
    if len(records) != steps:
        raise RuntimeError(f"trainer logged {len(records)} steps, expected {steps}")
    global last_host_peak_gib
    last_host_peak_gib = usage.ru_maxrss / 2**20  # KiB on Linux
    return records, out


def steady_rate(trainer, shape, warmup, steps, threads, workdir, activation, extra):
    """Tokens/s over the timed steps as a whole: their tokens over the sum of their step_time_s,
    which tile the step loop after the warmup (logging included, so a step's work that another step
    waits for is counted wherever it lands, as with delayed offload updates). One-element list, so
    it medians like the per-step figures."""
    records, _ = run_trainer(trainer, shape, warmup + steps, threads, workdir, activation, extra)
    seconds = sum(r["step_time_s"] for r in records[warmup:])
    return [tokens_per_step(shape) * steps / seconds]


def saved_model_numel(out):
    """Elements of the final model in `out`: model.safetensors, or the shards its index names."""
    index = os.path.join(out, "model.safetensors.index.json")
    if not os.path.exists(index):
        return safetensors_numel(os.path.join(out, "model.safetensors"))
    with open(index) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    return sum(safetensors_numel(os.path.join(out, shard)) for shard in shards)


def ours(trainer, shape, steps, threads, workdir, activation, extra):
    records, out = run_trainer(trainer, shape, steps, threads, workdir, activation, extra)
    rates = [r["tokens_per_second"] for r in records]
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    return rates, config, saved_model_numel(out)


# The config key of each family's activation (--activation).
ACTIVATION_KEY = {"gpt2": "activation_function", "opt": "activation_function", "llama": "hidden_act",
                  "qwen2": "hidden_act", "gemma3_text": "hidden_activation"}


def hf_config(shape, activation):
    import transformers

    config_class = {"gpt2": transformers.GPT2Config, "opt": transformers.OPTConfig, "llama": transformers.LlamaConfig,
                    "qwen2": transformers.Qwen2Config, "gemma3_text": transformers.Gemma3TextConfig}
    extra = {ACTIVATION_KEY[shape["family"]]: activation} if activation else {}
    # Our trainer's fresh model takes the byte tokenizer's EOS (256) as BOS and EOS.
    return config_class[shape["family"]](**shape["config"], bos_token_id=256, eos_token_id=256, **extra)


# The peers: HF's model in eager mode and under torch.compile, and plain_gpt.py's GPT-2 likewise.
PEERS = ("hf-eager", "hf-compile", "gpt-eager", "gpt-compile")


def peer_worker(spec):
    """One peer's segment (run in its own process): prints {"rates": [...], "params": N, ...}."""
    import torch

    shape = SHAPES[spec["shape"]]
    device = spec["device"]
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    config = hf_config(shape, spec["activation"])
    if spec["peer"].startswith("gpt-"):
        from plain_gpt import PlainGPT

        model = PlainGPT(config)
        loss_of = lambda m, ids: m(ids)
    else:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
        tied = model.lm_head.weight is model.get_input_embeddings().weight
        assert tied == config.tie_word_embeddings, "HF's LM head is not tied as the config says"
        loss_of = lambda m, ids: m(input_ids=ids, labels=ids).loss
    assert all(p.dtype == torch.float32 for p in model.parameters())
    model.to(device).train()
    named = list(model.named_parameters())
    # transformers Trainer's grouping: biases and LayerNorm / RMSNorm weights undecayed.
    no_decay_name = lambda n: n.endswith("bias") or ".ln_" in n or "norm" in n
    groups = [{"params": [t for n, t in named if not no_decay_name(n)], "weight_decay": WEIGHT_DECAY},
              {"params": [t for n, t in named if no_decay_name(n)], "weight_decay": 0.0}]
    optim_kind = {"fused": dict(fused=True), "foreach": dict(foreach=True), "for-loop": dict(foreach=False)}
    optimizer = torch.optim.AdamW(groups, lr=LEARNING_RATE, **optim_kind[spec["optim"]])
    forward = torch.compile(model) if spec["peer"].endswith("-compile") else model
    # On the GPU: bf16 autocast over fp32 parameters (HF Trainer's --bf16); on the CPU: fp32.
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda")
    steps = spec["steps"]
    # Byte-level ids, as our trainer's byte tokenizer produces (ids < 257 whatever vocab_size is).
    micro = micro_batches(shape)
    batches = [torch.randint(0, 257, (shape["batch"], shape["block"]), device=device) for _ in range(steps * micro)]
    tokens = tokens_per_step(shape)
    rates = []
    for i in range(steps):
        start = time.perf_counter()
        for ids in batches[i * micro:(i + 1) * micro]:  # gradients summed over the step's micro-batches
            with autocast:
                loss = loss_of(forward, ids)
            (loss / micro if micro > 1 else loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()  # also waits for the GPU
        rates.append(tokens / (time.perf_counter() - start))
    print(json.dumps({"rates": rates, "params": sum(t.numel() for t in model.parameters()),
                      "torch_threads": torch.get_num_threads()}))


# The malloc policy our trainer sets for itself (train_loop.cpp, keep_freed_memory), as glibc's
# environment variables: --peer_same_malloc gives it to the peers' processes too.
SAME_MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1), "MALLOC_TOP_PAD_": str(64 << 20)}


def peer(shape_name, steps, threads, activation, optim, same_malloc, device, name):
    spec = {"shape": shape_name, "steps": steps, "threads": threads, "activation": activation, "optim": optim,
            "device": device, "peer": name}
    env = dict(os.environ, TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false")
    if same_malloc:
        env.update(SAME_MALLOC_ENV)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer_worker", json.dumps(spec)],
                          check=True, stdout=subprocess.PIPE, text=True, env=env)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["torch_threads"] != threads:
        raise RuntimeError(f"{name} ran with {result['torch_threads']} torch threads, not {threads}")
    return result["rates"], result["params"]


def check_same_model(shape, activation, our_config, our_params, peer_params):
    """Both sides must build the same network: same config values that set the work, same size."""
    expected = hf_config(shape, activation).to_dict()
    keys = list(shape["config"]) + ["model_type", "tie_word_embeddings", ACTIVATION_KEY[shape["family"]]]
    diff = {k: (our_config.get(k), expected.get(k)) for k in keys if our_config.get(k) != expected.get(k)}
    if diff:
        raise RuntimeError(f"our model config differs from HF's (ours, HF): {diff}")
    if our_params != peer_params:
        raise RuntimeError(f"parameter count differs: ours {our_params:,}, the peer's {peer_params:,}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainer", help="path to the trainer binary (required)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads, both sides")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed steps per segment (HF eager on the CPU settles only after about 3)")
    parser.add_argument("--steps", type=int, default=6, help="timed steps per segment")
    parser.add_argument("--rounds", type=int, default=3, help="segments per side, alternating ours/peer")
    parser.add_argument("--shapes", default="default,gpt2", help=f"comma-separated, of {','.join(SHAPES)}")
    parser.add_argument("--activation", default="",
                        help="override activation_function on both sides (e.g. gelu_pytorch_tanh: the same tanh "
                             "GELU, fused in HF too); default: GPT-2's gelu_new")
    parser.add_argument("--peer_optim", choices=("fused", "foreach", "for-loop"), default="fused",
                        help="torch.optim.AdamW implementation of the peers (fused: HF Trainer's default)")
    parser.add_argument("--peer_same_malloc", action="store_true",
                        help="run the peers with the glibc malloc policy our trainer sets for itself (freed memory kept, "
                             "no mmap'd blocks); default: Python's stock malloc, what HF users get")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where both sides train (cuda: bf16 mixed precision, the first GPU)")
    parser.add_argument("--peers", default=None,
                        help=f"comma-separated, of {','.join(PEERS)} (HF's model, and a plain PyTorch GPT-2 for "
                             "GPT-2 shapes, in eager mode or under torch.compile), or none (ours alone); default: "
                             "hf-eager on the CPU, hf-eager,hf-compile,gpt-compile on cuda")
    parser.add_argument("--peak_tflops", type=float, default=989.0,
                        help="the device's peak for MFU (default 989: an H100's dense bf16)")
    parser.add_argument("--trainer_args", default="", help="extra trainer flags, e.g. '--offload optimizer'")
    parser.add_argument("--compare_trainer_args", default=None,
                        help="instead of the peers, compare with our trainer run with these flags added (NAME=value words: "
                             "its environment); both sides timed by the wall time of their timed steps (logging included), e.g. "
                             "'--report_to none' or 'LLMRDZV_CUDA_KERNELS=0'")
    parser.add_argument("--profile_dir", default=None,
                        help="also profile 3 steps of ours per shape: traces to DIR/<shape>.json, summaries printed")
    parser.add_argument("--peer_worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer_worker:
        peer_worker(json.loads(args.peer_worker))
        return 0
    if not args.trainer:
        parser.error("--trainer is required")

    if args.compare_trainer_args is not None:
        return compare_trainer_args(args)

    requested = (args.peers or ("hf-eager,hf-compile,gpt-compile" if args.device == "cuda" else "hf-eager")).split(",")
    if requested == ["none"]:
        requested = []
    elif set(requested) - set(PEERS):
        parser.error(f"--peers: unknown peer in {args.peers!r} ({', '.join(PEERS)}, or none)")
    for name in args.shapes.split(","):
        if name not in SHAPES:
            parser.error(f"--shapes: unknown shape {name!r} ({', '.join(SHAPES)})")
        if args.peers and SHAPES[name]["family"] != "gpt2" and any(m.startswith("gpt-") for m in requested):
            parser.error(f"--peers: the plain GPT peers train GPT-2 shapes only, not {name!r}")
    our_extra = args.trainer_args.split() + (["--use_cpu"] if args.device == "cpu" else [])
    results = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="trainer-bench-") as tmp:
        for name in args.shapes.split(","):
            shape = SHAPES[name]
            # The default peers: the plain GPT ones only where the shape is GPT-2's.
            modes = [m for m in requested if shape["family"] == "gpt2" or not m.startswith("gpt-")]
            total = args.warmup + args.steps
            workdir = os.path.join(tmp, name)
            os.makedirs(workdir)
            rates = {side: [] for side in ["ours"] + modes}
            memory = {side: 0.0 for side in rates}
            host_peak = 0.0
            steal = {side: CpuSteal() for side in rates}
            loads = [loadavg()]
            for _ in range(args.rounds):
                for side in rates:
                    with GpuMemoryPeak(args.device) as peak, steal[side]:
                        if side == "ours":
                            got, our_config, our_params = ours(args.trainer, shape, total, args.threads, workdir,
                                                               args.activation, our_extra)
                            host_peak = max(host_peak, last_host_peak_gib)
                        else:
                            got, peer_params = peer(name, total, args.threads, args.activation, args.peer_optim,
                                                  args.peer_same_malloc, args.device, side)
                    rates[side] += got[args.warmup:]
                    memory[side] = max(memory[side], peak.peak or 0.0)
                    loads.append(loadavg())
                if modes:
                    check_same_model(shape, args.activation, our_config, our_params, peer_params)
                else:
                    peer_params = our_params
            tokens = {side: statistics.median(r) for side, r in rates.items()}
            best_peer = max(modes, key=lambda m: tokens[m]) if modes else None
            entry = {"params": peer_params, "block": shape["block"], "batch": shape["batch"], "micro": micro_batches(shape),
                     "ours_tokens_per_s": round(tokens["ours"], 1), "ours_best": round(max(rates["ours"]), 1),
                     "ratio": round(tokens["ours"] / tokens[best_peer], 3) if modes else None, "ratio_to": best_peer,
                     "ours_host_peak_gib": round(host_peak, 2), "load_min": min(loads), "load_max": max(loads)}
            for side in rates:
                entry[f"{side}_tokens_per_s"] = round(tokens[side], 1)
                entry[f"{side}_steal"] = round(steal[side].share, 3)
                if args.device == "cuda":
                    entry[f"{side}_mfu"] = round(6 * peer_params * tokens[side] / (args.peak_tflops * 1e12), 4)
                    entry[f"{side}_peak_gib"] = round(memory[side], 2)
            results[name] = entry
            if args.profile_dir:
                profile_ours(args, name, shape, workdir, our_extra)
            for side in rates:
                rows.append((name, side, peer_params, shape["block"], shape["batch"], micro_batches(shape), tokens[side],
                             tokens["ours"] / tokens[side], max(rates["ours"]) / max(rates[side]), entry.get(f"{side}_mfu"),
                             entry.get(f"{side}_peak_gib"), steal[side].share, min(loads), max(loads)))
    print(f"device={args.device} threads={args.threads} warmup={args.warmup} timed_steps={args.steps} "
          f"rounds={args.rounds} activation={args.activation or 'gelu_new'} peer_optim={args.peer_optim} "
          f"peer_same_malloc={args.peer_same_malloc} (median tokens/s over all timed steps; best = fastest step of each side)")
    print(f"{'shape':<19} {'side':<11} {'params':>12} {'block':>6} {'batch':>6} {'micro':>5} {'tok/s':>11} {'ours/side':>9} "
          f"{'best/best':>9} {'MFU':>6} {'peak GiB':>8} {'host GiB':>8} {'steal':>6} {'load 1m':>11}")
    for name, side, params, block, batch, micro, t, r, rb, mfu, mem, stolen, lo, hi in rows:
        side_name = side
        mfu_text = f"{mfu * 100:5.1f}%" if mfu is not None else "     -"
        mem_text = f"{mem:8.2f}" if mem is not None else "       -"
        host_text = f"{results[name]['ours_host_peak_gib']:8.2f}" if side == "ours" else "       -"
        print(f"{name:<19} {side_name:<11} {params:>12,} {block:>6} {batch:>6} {micro:>5} {t:>11.1f} {r:>9.3f} {rb:>9.3f} "
              f"{mfu_text} {mem_text} {host_text} {stolen * 100:5.1f}% {lo:>5.2f}-{hi:<5.2f}")
    summary = {"device": args.device, "threads": args.threads, "activation": args.activation or "gelu_new",
               "peer_optim": args.peer_optim, "peer_same_malloc": args.peer_same_malloc, "peers": requested,
               "target_ratio": 1.2 if args.device == "cpu" else None, **results,
               "min_ratio": round(min(r["ratio"] for r in results.values()), 3) if requested else None}
    print(json.dumps(summary))
    return 0


PROFILED_STEPS = 3


def profile_ours(args, name, shape, workdir, extra):
    """Steps 2..1+PROFILED_STEPS of a fresh run of ours, traced; prints the trace's summary."""
    _, out = run_trainer(args.trainer, shape, 1 + PROFILED_STEPS, args.threads, workdir, args.activation,
                         extra + ["--profile_steps", str(PROFILED_STEPS)])
    os.makedirs(args.profile_dir, exist_ok=True)
    trace = os.path.join(args.profile_dir, f"{name}.json")
    shutil.copyfile(os.path.join(out, "profile", "rank-0.json"), trace)
    print(f"=== profile of ours, {name}: {trace}")
    report = profile_summary.summarise(profile_summary.load_events(trace), PROFILED_STEPS, 20)
    profile_summary.print_text(report, sys.stdout)
    sys.stdout.flush()


def compare_trainer_args(args):
    """Our trainer against itself with extra flags, alternating A, B, A, B, ...; prints B/A."""
    base = args.trainer_args.split() + (["--use_cpu"] if args.device == "cpu" else [])
    other = base + args.compare_trainer_args.split()
    results = {}
    with tempfile.TemporaryDirectory(prefix="trainer-bench-") as tmp:
        for name in args.shapes.split(","):
            shape = SHAPES[name]
            workdir = os.path.join(tmp, name)
            os.makedirs(workdir)
            rates = {"a": [], "b": []}
            memory = {"a": 0.0, "b": 0.0}
            steal = {"a": CpuSteal(), "b": CpuSteal()}
            loads = [loadavg()]
            for _ in range(args.rounds):
                for side, extra in (("a", base), ("b", other)):
                    with GpuMemoryPeak(args.device) as peak, steal[side]:
                        rates[side] += steady_rate(args.trainer, shape, args.warmup, args.steps, args.threads,
                                                   workdir, args.activation, extra)
                    memory[side] = max(memory[side], peak.peak or 0.0)
                    loads.append(loadavg())
            a, b = statistics.median(rates["a"]), statistics.median(rates["b"])
            results[name] = {"a_tokens_per_s": round(a, 1), "b_tokens_per_s": round(b, 1), "b_over_a": round(b / a, 4),
                             "a_runs": [round(r, 1) for r in rates["a"]], "b_runs": [round(r, 1) for r in rates["b"]],
                             "a_steal": round(steal["a"].share, 3), "b_steal": round(steal["b"].share, 3),
                             "load_min": min(loads), "load_max": max(loads)}
            if args.device == "cuda":
                results[name].update(a_peak_gib=round(memory["a"], 2), b_peak_gib=round(memory["b"], 2))
            print(f"{name}: A ({' '.join(base) or 'defaults'}) {a:.1f} tok/s, B (+ {args.compare_trainer_args}) "
                  f"{b:.1f} tok/s, B/A {b / a:.4f} (median of {args.rounds} runs each, the wall time of "
                  f"{args.steps} steps after {args.warmup} of warmup; load {min(loads)}-{max(loads)}; CPU time stolen by the "
                  f"hypervisor A {steal['a'].share:.1%}, B {steal['b'].share:.1%})"
                  + (f"; peak GPU memory A {memory['a']:.2f} GiB, B {memory['b']:.2f} GiB" if args.device == "cuda" else ""))
    print(json.dumps({"a": args.trainer_args, "b_adds": args.compare_trainer_args, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
