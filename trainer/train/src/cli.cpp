// The option tables of `trainer train` and `trainer generate`, the command-line walk that applies
// `--config` first and flags after it, and the cross-option checks.
#include "llmrdzv/train/cli.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "config_file.hpp"
#include "deepspeed_config.hpp"
#include "llmrdzv/common/text_values.hpp"
#include "option_table.hpp"

namespace llmrdzv::train {
namespace {

using T = TrainOptions;
const OptionSpec<T> kTrainTable[] = {
    {"model_name_or_path", &T::model_name_or_path, "HF model directory (config.json + model.safetensors) to start from, or a hub name (gpt2, org/name) found offline in the hub cache as transformers finds it with HF_HUB_OFFLINE=1 (a local directory of that name wins; the run log names the snapshot); empty = a fresh model"},
    {"model_revision", &T::model_revision, "the hub revision (branch, tag or 40-hex commit) of hub names given to --model_name_or_path, --tokenizer_name and --config_name"},
    {"revision", &T::model_revision, "another name of --model_revision (give one of the two)"},
    {"config_name", &T::config_name, "config.json (or a directory holding one; model_type gpt2, opt, llama, mistral, qwen2, qwen3, phi3, gemma2 or gemma3_text), a hub name in the hub cache, or a preset name (gpt2, gpt2-medium, gpt2-large, gpt2-xl, opt-125m, opt-350m, opt-1.3b, opt-2.7b, opt-6.7b, smollm-135m, tinyllama-1.1b, llama-2-7b, llama-2-13b, mistral-7b, qwen2.5-0.5b, qwen2.5-7b, qwen3-0.6b, qwen3-8b, phi-3-mini, gemma-2-2b, gemma-3-1b), for a fresh model; empty = GPT-2's defaults"},
    {"model_type", &T::model_type, "run_clm.py's family of a fresh model without --config_name (gpt2, opt, llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3_text): the defaults of transformers' config class for it, as --config_overrides then changes them; with --config_name or --model_name_or_path it must name their model_type"},
    {"config_overrides", &T::config_overrides, "comma-separated key=value pairs applied to the model config, e.g. n_embd=256,n_layer=4"},
    {"tokenizer_name", &T::tokenizer_name, "hub name (in the hub cache) or directory with vocab.json + merges.txt, or tokenizer.json as transformers 5 saves it (byte-level BPE as GPT-2, OPT and Llama 3 ship it, or Llama 2's SentencePiece-style BPE); empty = the model directory's (refused if it has none, only another tokenizer format, or a tokenizer.json of another kind of tokenizer, naming the component); a fresh model: the byte-level tokenizer"},
    {"use_fast_tokenizer", &T::use_fast_tokenizer, "accepted for run_clm.py command lines: this trainer has one tokenizer implementation, whose ids equal the fast (tokenizers) one's; false is noted in the log"},
    {"low_cpu_mem_usage", &T::low_cpu_mem_usage, "memory-map model.safetensors instead of reading it into memory: loading then holds about one copy of the weights instead of two (--shard_parameters always maps it and reads a unit at a time)"},
    {"gradient_checkpointing", &T::gradient_checkpointing, "recompute block activations in backward to save memory"},
    {"dataset_name", &T::dataset_name, "run_clm.py's dataset, found offline: a hub name (org/name) in the datasets library's Arrow cache ($HF_DATASETS_CACHE, else $HF_HOME/datasets; --cache_dir replaces it) or in the hub cache's parquet files (datasets--org--name), or a folder written by save_to_disk; rows tokenised as tokenizer(row) and grouped into --block_size blocks per 1000 rows as run_clm.py's group_texts does (see trainer(1), DATASETS)"},
    {"dataset_config_name", &T::dataset_config_name, "the configuration of --dataset_name (e.g. wikitext-2-raw-v1); empty = its only or default one"},
    {"dataset_revision", &T::dataset_revision, "the hub revision (branch, tag or commit) of --dataset_name in the hub cache"},
    {"text_column_name", &T::text_column_name, "the dataset column to train on; empty = text when the dataset has it, else its first column (run_clm.py's rule)"},
    {"preprocessing_num_workers", &T::preprocessing_num_workers, "run_clm.py's num_proc for --dataset_name: the rows are cut into this many contiguous shards, each grouped into blocks from its own start as datasets.map(num_proc=N) does, and tokenised with this many threads; 0 = one"},
    {"overwrite_cache", &T::overwrite_cache, "rebuild the token cache even when it matches the inputs and tokenizer"},
    {"keep_linebreaks", &T::keep_linebreaks, "false: each line of a text file (not .jsonl) in --train_file / --validation_file is one document, its line break dropped, as run_clm.py's text datasets read them; true (the default): a text file is one document, line breaks kept"},
    {"train_file", &T::train_file, "training text: a text file, a JSON Lines file (.jsonl or .json: its \"text\" members) or a folder of them (recursive; hidden and binary files skipped, and the run's own output, cache and logging folders); CSV files are refused"},
    {"validation_file", &T::validation_file, "validation text; empty = split off --validation_split_percentage of the training text"},
    {"validation_split_percentage", &T::validation_split_percentage, "percent of the training documents (files, JSON Lines lines) held out for evaluation when there is no --validation_file; a single text file is one document, so give --validation_file with one"},
    {"block_size", &T::block_size, "tokens per training sequence; 0 = the model's n_positions (at most 1024)"},
    {"streaming", &T::streaming, "tokenise on the fly instead of building the token cache"},
    {"max_train_samples", &T::max_train_samples, "use at most this many training blocks; -1 = all"},
    {"max_eval_samples", &T::max_eval_samples, "evaluate on at most this many blocks; -1 = all"},
    {"cache_dir", &T::cache_dir, "the Hugging Face hub cache that hub names are looked up in, as run_clm.py's --cache_dir; empty = huggingface_hub's: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub"},
    {"token_cache_dir", &T::token_cache_dir, "token cache directory (the tokenised corpus, reused while inputs and tokenizer are unchanged); empty = <output_dir>/token-cache"},
    {"per_device_train_batch_size", &T::per_device_train_batch_size, "sequences per micro-batch on each rank"},
    {"per_device_eval_batch_size", &T::per_device_eval_batch_size, "sequences per evaluation batch on each rank"},
    {"gradient_accumulation_steps", &T::gradient_accumulation_steps, "micro-batches per optimizer step"},
    {"learning_rate", &T::learning_rate, "peak AdamW learning rate"},
    {"weight_decay", &T::weight_decay, "AdamW weight decay (never applied to biases and LayerNorm weights)"},
    {"adam_beta1", &T::adam_beta1, "AdamW beta1"},
    {"adam_beta2", &T::adam_beta2, "AdamW beta2"},
    {"adam_epsilon", &T::adam_epsilon, "AdamW epsilon"},
    {"max_grad_norm", &T::max_grad_norm, "clip the global gradient norm to this; 0 = no clipping"},
    {"num_train_epochs", &T::num_train_epochs, "passes over the training blocks (may be fractional)"},
    {"max_steps", &T::max_steps, "optimizer steps to run; > 0 overrides --num_train_epochs"},
    {"lr_scheduler_type", &T::lr_scheduler_type, "learning-rate schedule: linear | cosine | constant_with_warmup (warmup, then decay or none) | constant (no warmup)"},
    {"warmup_steps", &T::warmup_steps, "linear warmup steps; > 0 overrides --warmup_ratio"},
    {"warmup_ratio", &T::warmup_ratio, "warmup as a fraction of the total steps"},
    {"seed", &T::seed, "seed for initial weights, dropout and data order"},
    {"do_train", &T::do_train, "train"},
    {"do_eval", &T::do_eval, "evaluate (loss and perplexity) on the validation blocks"},
    {"output_dir", &T::output_dir, "where checkpoints, metrics.jsonl and the final HF model go"},
    {"overwrite_output_dir", &T::overwrite_output_dir, "allow an output_dir that already holds a run"},
    {"resume_from_checkpoint", &T::resume_from_checkpoint, "checkpoint directory to resume from, or 'latest' for the newest one in output_dir"},
    {"logging_steps", &T::logging_steps, "log loss, learning rate and speed every this many steps"},
    {"profile_steps", &T::profile_steps, "record this many training steps (from the second on) with torch's profiler: CPU ops, and on a GPU its kernels and copies, as one Chrome trace per rank in <output_dir>/profile/rank-<k>.json (chrome://tracing or ui.perfetto.dev); 0 = off"},
    {"report_to", &T::report_to, "where rank 0 also writes the logged metrics: tensorboard (event files in --logging_dir; 'all' means the same) | none; metrics.jsonl in output_dir is always written"},
    {"logging_dir", &T::logging_dir, "TensorBoard log directory; empty = <output_dir>/runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname> as transformers names it, and a resumed run continues the directory of the run it resumes"},
    {"eval_strategy", &T::eval_strategy, "when to evaluate during training, as transformers' TrainingArguments: no | steps (every --eval_steps) | epoch (at the end of each epoch; not with --streaming) | auto (steps when --eval_steps is above 0, else no); anything but no and auto turns on --do_eval, which also evaluates once more at the end"},
    {"evaluation_strategy", &T::eval_strategy, "the name --eval_strategy had before transformers 4.46 (give one of the two)"},
    {"eval_steps", &T::eval_steps, "with --eval_strategy steps: evaluate every this many steps (0 = every --logging_steps, transformers' default); with auto: every this many steps with --do_eval, 0 = only at the end"},
    {"save_strategy", &T::save_strategy, "when to write training checkpoints (checkpoint-N: model, optimizer state, data position): steps (every --save_steps, and at the end) | epoch (at the end of each epoch, and at the end; not with --streaming) | best (whenever an evaluation finds a new best --metric_for_best_model) | no (never; the final model is still written to output_dir, but the run cannot be resumed)"},
    {"metric_for_best_model", &T::metric_for_best_model, "the evaluation figure that ranks checkpoints for --save_strategy best and --load_best_model_at_end: loss, perplexity or bits_per_byte (the eval_ prefix may be given); empty = loss with --load_best_model_at_end, else none"},
    {"greater_is_better", &T::greater_is_better, "whether a higher --metric_for_best_model is better; auto = false for names ending in 'loss' and true for others (transformers' rule: give false with perplexity)"},
    {"load_best_model_at_end", &T::load_best_model_at_end, "at the end of training, load the best checkpoint's model (by --metric_for_best_model), evaluate it and export it to output_dir; needs --eval_strategy and --save_strategy alike (steps with --save_steps a multiple of --eval_steps, or epoch), or --save_strategy best; --save_total_limit keeps the best checkpoint too"},
    {"save_steps", &T::save_steps, "with --save_strategy steps: write a checkpoint every this many steps; 0 = only at the end"},
    {"save_total_limit", &T::save_total_limit, "keep only the newest this many checkpoints; 0 = keep all"},
    {"save_safetensors_max_shard_size", &T::save_safetensors_max_shard_size, "largest model-0000K-of-0000N.safetensors shard of the final model (with model.safetensors.index.json), as transformers' max_shard_size: 5GB, 200MB, 512KiB or bytes; a smaller model is one model.safetensors"},
    {"nproc", &T::nproc, "start a local rdzvd and this many ranks on this machine, as torchrun's standalone mode does; 0 = one process, or the rank given by the rendezvous environment (srun with the llm-rdzv option)"},
    {"threads", &T::threads, "CPU threads for torch; 0 = torch's default, or with several ranks on a node an equal share of its cores (a task's own cores when Slurm binds tasks)"},
    {"use_cpu", &T::use_cpu, "train on the CPU even when CUDA is available"},
    {"no_cuda", &T::use_cpu, "the name --use_cpu had before transformers 4.38 (give one of the two)"},
    {"dataloader_num_workers", &T::dataloader_num_workers, "accepted for TrainingArguments command lines, with no effect: every rank reads its blocks from the memory-mapped token cache itself"},
    {"bf16", &T::bf16, "mixed precision: bf16 parameters and gradients for compute, fp32 master weights and AdamW state in the optimizer; auto = on for CUDA GPUs with bf16 (compute capability 8.0 or newer, e.g. A100, H100), off on the CPU (where --bf16 works, slowly)"},
    {"fp16", &T::fp16, "mixed precision in fp16: fp16 parameters and gradients, fp32 master weights, dynamic loss scaling (steps whose gradients overflow are skipped, the scale halved and the learning-rate schedule held, as transformers does); for GPUs without bf16"},
    {"tf32", &T::tf32, "let fp32 matrix products and convolutions use TF32 tensor cores; auto = on for CUDA (compute capability 8.0 or newer), CUDA only"},
    {"torch_dtype", &T::torch_dtype, "run_clm.py's dtype to load the model in: auto or float32 (weights as stored, trained in the precision --bf16/--fp16 choose), bfloat16 (turns on --bf16) or float16 (turns on --fp16); master weights stay fp32 either way"},
    {"deepspeed", &T::deepspeed, "a DeepSpeed config (a JSON file, or the JSON itself) mapped onto these options as HF's Trainer maps it: \"auto\" takes the option's value, an explicit value sets the option and must agree with it where the option is also given; zero_optimization stage 0-2 with offload_optimizer device cpu is --offload optimizer, stage 3 is --shard_parameters and its offload_param device cpu --offload_parameters; its scheduler block picks DeepSpeed's WarmupLR, WarmupDecayLR or WarmupCosineLR curve; nvme, other optimizers and any key it does not know are refused by name (trainer(1), DEEPSPEED CONFIGS)"},
    {"optim", &T::optim, "the optimizer, as TrainingArguments names it: adamw_torch, adamw_torch_fused or adamw_hf, all this trainer's AdamW (decoupled weight decay, its own fused kernels); other optimizers are refused"},
    {"offload", &T::offload, "where optimizer state lives: none | optimizer (ZeRO-Offload: fp32 master weights and AdamW moments in host memory, sharded across ranks; the GPU keeps only the parameters and one gradient, in their type)"},
    {"offload_chunk_mb", &T::offload_chunk_mb, "with --offload optimizer: MiB of fp32 master weights per pipeline chunk (GPU copies of one chunk overlap the CPU update of the next)"},
    {"offload_delayed_update", &T::offload_delayed_update, "with --offload optimizer: after this many optimizer steps, ZeRO-Offload's one-step delayed parameter update: the CPU's AdamW of one step runs while the GPU computes the next, on weights one update older (ZeRO-Offload starts it after a few dozen steps; evaluating and saving apply the pending update first, so resumes with the same --save_steps and --eval_steps are exact); 0 = never"},
    {"offload_gradient_sync", &T::offload_gradient_sync, "with --offload optimizer: reduce (each rank receives only its shard's gradient, half the traffic of all_reduce) | all_reduce | auto (reduce on GPUs, all_reduce on the CPU)"},
    {"ddp_bucket_cap_mb", &T::ddp_bucket_cap_mb, "gradient all-reduce bucket size in MiB (data parallel)"},
    {"shard_parameters", &T::shard_parameters, "ZeRO-3 (DeepSpeed stage 3, FSDP's full_shard): each rank keeps 1/N of every block's parameters, gradients and optimizer state, gathering a block's parameters only while it computes (the next block's gathered while one computes) and reduce-scattering its gradient as soon as backward has made it; the CPU only in this version (trainer(1), SHARDED PARAMETERS)"},
    {"offload_parameters", &T::offload_parameters, "with --shard_parameters, ZeRO-3's parameter offload (DeepSpeed's offload_param): the parameter shards live in host memory; on the CPU, the only device --shard_parameters trains on in this version, they are there already, so it changes nothing and the log says so"},
};

using G = GenerateOptions;
const OptionSpec<G> kGenerateTable[] = {
    {"model", &G::model, "HF model directory to sample from (e.g. a run's output_dir), or a hub name found offline in the hub cache"},
    {"tokenizer_name", &G::tokenizer_name, "hub name (in the hub cache) or directory with vocab.json + merges.txt, or tokenizer.json (byte-level BPE, or Llama 2's SentencePiece-style BPE); empty = the model directory's (refused if it has none, or only another tokenizer format)"},
    {"model_revision", &G::model_revision, "the hub revision (branch, tag or 40-hex commit) of hub names given to --model and --tokenizer_name"},
    {"revision", &G::model_revision, "another name of --model_revision (give one of the two)"},
    {"cache_dir", &G::cache_dir, "the Hugging Face hub cache; empty = huggingface_hub's ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub)"},
    {"prompt", &G::prompt, "text to continue; empty = start from the end-of-text token"},
    {"max_new_tokens", &G::max_new_tokens, "tokens to generate"},
    {"temperature", &G::temperature, "sampling temperature; 0 = greedy"},
    {"top_k", &G::top_k, "sample among the k most likely tokens; 0 = all"},
    {"seed", &G::seed, "sampling seed"},
    {"threads", &G::threads, "CPU threads for torch; 0 = torch's default"},
    {"use_cpu", &G::use_cpu, "run on the CPU even when CUDA is available"},
};

using K = TokenizerOptions;
const OptionSpec<K> kTokenizerTable[] = {
    {"train_file", &K::train_file, "the corpus: a text file, a JSON Lines file (its \"text\" members) or a folder, read as training reads it; every document is fed line by line, as HF's trainer reads a file"},
    {"vocab_size", &K::vocab_size, "tokens in the vocabulary: the special tokens, the 256 bytes and the merges (fewer when the corpus runs out of pairs)"},
    {"min_frequency", &K::min_frequency, "stop merging when the most frequent pair occurs fewer times than this"},
    {"special_tokens", &K::special_tokens, "special tokens, separated by whitespace, at ids 0, 1, ...; the first ends documents (EOS, as GPT-2's <|endoftext|>)"},
    {"output_dir", &K::output_dir, "where tokenizer.json, tokenizer_config.json, vocab.json, merges.txt and special_tokens_map.json go (for --tokenizer_name)"},
    {"threads", &K::threads, "threads that count words; 0 = one per CPU this process may use (a Slurm job's CPU set)"},
};

// Options of run_clm.py, TrainingArguments and the launchers this trainer replaces that have no
// meaning here: refused with what to do instead, rather than as unknown options.
struct RefusedOption {
  std::string_view name;
  std::string_view instead;
};
constexpr RefusedOption kRefusedTrainOptions[] = {
    {"torch_compile", "this trainer runs its own fused kernels and has no torch.compile step: drop the option (trainer-bench measures the trainer against HF + torch.compile)"},
    {"torch_compile_backend", "this trainer has no torch.compile step: drop the option"},
    {"torch_compile_mode", "this trainer has no torch.compile step: drop the option"},
    {"trust_remote_code", "a model repository's own Python modelling code cannot run in this C++ trainer: it trains the families its config.json model_type names (see trainer(1), MODELS); drop the option"},
    {"per_gpu_train_batch_size", "use --per_device_train_batch_size (transformers' name since 2020; per rank here)"},
    {"per_gpu_eval_batch_size", "use --per_device_eval_batch_size (transformers' name since 2020; per rank here)"},
    {"local_rank", "every rank reads LOCAL_RANK from its environment (srun --llm-rdzv or trainer --nproc set it): drop the --local_rank that torch.distributed.launch and deepspeed passed"},
    {"push_to_hub", "compute nodes have no network and the trainer never reaches the hub: copy output_dir to a login node and upload it there (hf upload)"},
    {"hub_model_id", "the trainer never reaches the hub: upload output_dir from a login node (hf upload)"},
    {"hub_token", "the trainer never reaches the hub: drop the option"},
    {"token", "the trainer never reaches the hub (models and datasets come from the offline caches): drop the option"},
    {"use_auth_token", "the trainer never reaches the hub (models and datasets come from the offline caches): drop the option"},
    {"fsdp", "PyTorch FSDP is not used here: --shard_parameters is full_shard (ZeRO-3), --offload optimizer shards the optimizer state across ranks in host memory (ZeRO-Offload), or give the DeepSpeed config with --deepspeed"},
    {"fsdp_config", "PyTorch FSDP is not used here: --shard_parameters is full_shard (ZeRO-3; each block is a unit), --offload optimizer shards the optimizer state across ranks (ZeRO-Offload)"},
};

// Upper bounds that keep absurd values from reaching torch (libgomp crashes on 100000 threads)
// or overflowing the step count.
constexpr std::int64_t kMaxThreads = 1024;
constexpr double kMaxEpochs = 1e6;
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;        // sequences per device per step
constexpr std::int64_t kMaxAccumulation = std::int64_t{1} << 20;  // micro-batches per step
constexpr std::int64_t kMaxChunkMb = std::int64_t{1} << 20;       // 1 TiB

constexpr std::string_view kTrainUsage =
    "usage: trainer [train] [--config FILE] [--OPTION VALUE]...\n"
    "       trainer generate --model DIR|NAME --prompt TEXT [--OPTION VALUE]...\n"
    "       trainer tokenizer --train_file FILE|DIR --output_dir DIR [--OPTION VALUE]...\n"
    "Train a causal language model of the GPT-2, OPT or Llama family (run_clm.py's option names).\n";
constexpr std::string_view kTokenizerUsage =
    "usage: trainer tokenizer --train_file FILE|DIR --output_dir DIR [--OPTION VALUE]...\n"
    "Train a byte-level BPE tokenizer as HF tokenizers' ByteLevelBPETokenizer.train does (the same merges).\n";
constexpr std::string_view kGenerateUsage =
    "usage: trainer generate --model DIR|NAME --prompt TEXT [--OPTION VALUE]...\n"
    "Sample text from a saved model.\n";

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <class Options>
std::string unknown_message(std::span<const OptionSpec<Options>> table, std::string what,
                            std::string_view name) {
  const OptionSpec<Options>* closest = nullptr;
  std::size_t best = 4;  // suggest only near misses
  for (const auto& spec : table) {
    const std::size_t distance = edit_distance(name, spec.name);
    if (distance < best) best = distance, closest = &spec;
  }
  if (closest) what += " (did you mean --" + std::string(closest->name) + "?)";
  return what;
}

// Whether `text` after the flag `spec` is its value (true, false, ...; auto where the flag has it).
template <class Options>
bool is_flag_value(const OptionSpec<Options>& spec, std::string_view text) {
  if (text == "auto") return std::holds_alternative<std::optional<bool> Options::*>(spec.field);
  for (std::string_view literal : {"true", "false", "True", "False", "1", "0", "yes", "no"}) {
    if (text == literal) return true;
  }
  return false;
}

// Whether -h or --help stands where an option may (a value such as `--prompt -h` is not a request
// for help); asked before parsing, so that help comes even with other arguments wrong.
template <class Options>
bool asks_for_help(std::span<const OptionSpec<Options>> table, std::span<const std::string> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") return true;
    if (!arg.starts_with("--") || arg.find('=') != std::string::npos) continue;
    const std::string name = arg.substr(2);
    const OptionSpec<Options>* spec = find_option(table, name);
    if (name == "config" || (spec && !is_flag(*spec))) {
      ++i;  // its value
    } else if (spec && i + 1 < args.size() && is_flag_value(*spec, args[i + 1])) {
      ++i;
    }
  }
  return false;
}

// The options a command line (and its --config file) gave, so that two names of one option are
// caught and --deepspeed can tell a given option from a default.
template <class Options>
class GivenOptions {
 public:
  // Records `spec`; a different name of the same option given before is an error.
  void add(const OptionSpec<Options>& spec) {
    for (const OptionSpec<Options>* other : given_) {
      if (other->field == spec.field && other->name != spec.name) {
        throw UsageError("--" + std::string(other->name) + " and --" + std::string(spec.name) +
                         " are two names of one option: give one of them");
      }
    }
    given_.push_back(&spec);
  }
  // Whether the option `spec` sets (by any of its names) was given.
  bool has(const OptionSpec<Options>& spec) const {
    return std::any_of(given_.begin(), given_.end(), [&](const auto* other) { return other->field == spec.field; });
  }

 private:
  std::vector<const OptionSpec<Options>*> given_;
};

template <class Options>
const OptionSpec<Options>& known_option(std::span<const OptionSpec<Options>> table, std::string_view name,
                                        const std::string& unknown) {
  if (const OptionSpec<Options>* spec = find_option(table, name)) return *spec;
  if constexpr (std::is_same_v<Options, TrainOptions>) {
    for (const RefusedOption& refused : kRefusedTrainOptions) {
      if (refused.name == name) {
        throw UsageError("--" + std::string(name) + " is not an option of this trainer: " + std::string(refused.instead));
      }
    }
  }
  throw UsageError(unknown_message(table, unknown, name));
}

template <class Options>
void parse_options(std::span<const OptionSpec<Options>> table, std::span<const std::string> args,
                   Options& options, GivenOptions<Options>& given) {
  // --config first, wherever it appears, so flags override the file.
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string path;
    if (args[i] == "--config") {
      if (i + 1 >= args.size()) throw UsageError("--config needs a file name");
      path = args[i + 1];
    } else if (args[i].starts_with("--config=")) {
      path = args[i].substr(9);
    } else {
      continue;
    }
    if (!options.config.empty()) throw UsageError("--config given twice");
    options.config = path;
    for (const ConfigEntry& entry : read_config_file(path)) {
      const std::string where = path + ":" + std::to_string(entry.line) + ": key '" + entry.key + "'";
      const OptionSpec<Options>& spec =
          known_option(table, entry.key, path + ":" + std::to_string(entry.line) + ": unknown key '" + entry.key + "'");
      set_option(options, spec, entry.value, where);
      given.add(spec);
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      throw UsageError("unexpected argument '" + arg + "' (options start with --)");
    }
    const std::size_t equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    if (name == "config") {
      if (equals == std::string::npos) ++i;
      continue;
    }
    const OptionSpec<Options>& spec = known_option(table, name, "unknown option '--" + name + "'");
    const std::string origin = "--" + name;
    if (equals != std::string::npos) {
      set_option(options, spec, std::string_view(arg).substr(equals + 1), origin);
    } else if (is_flag(spec)) {
      const bool explicit_value = i + 1 < args.size() && is_flag_value(spec, args[i + 1]);
      set_option(options, spec, explicit_value ? std::string_view(args[++i]) : "true", origin);
    } else {
      if (i + 1 >= args.size()) throw UsageError(origin + " needs a value");
      set_option(options, spec, args[++i], origin);
    }
    given.add(spec);
  }
}

void require(bool condition, const std::string& message) {
  if (!condition) throw UsageError(message);
}

// --deepspeed's settings over the options, with HF Trainer's rules: an explicit value sets its
// option; where the option was also given (command line or --config), the two must agree; two
// keys of the config that set one option must agree too (warmup_max_lr and optimizer.params.lr).
void apply_deepspeed(TrainOptions& options, const GivenOptions<T>& given) {
  DeepSpeedMapping mapping = read_deepspeed_config(options.deepspeed);
  std::vector<const DeepSpeedSetting*> applied;
  for (const DeepSpeedSetting& setting : mapping.settings) {
    const OptionSpec<T>* spec = find_option<T>(kTrainTable, setting.option);
    if (!spec) throw std::logic_error("deepspeed_config maps onto an unknown option --" + setting.option);
    const std::string where = mapping.origin + ": \"" + setting.key + "\"";
    TrainOptions probe = options;
    set_option(probe, *spec, setting.value, where);
    const std::string mapped = value_text(probe, *spec);
    for (const DeepSpeedSetting* earlier : applied) {
      if (earlier->option == setting.option && mapped != value_text(options, *spec)) {
        throw UsageError(where + ": " + setting.value + " disagrees with \"" + earlier->key + "\": " + earlier->value +
                         " (both set --" + setting.option + ")");
      }
    }
    if (given.has(*spec)) {
      if (mapped != value_text(options, *spec)) {
        throw UsageError(where + ": " + setting.value + " disagrees with --" + std::string(spec->name) + " " +
                         value_text(options, *spec) + " given on the command line or in --config (give one of them, "
                         "or \"auto\" in the DeepSpeed config to take the option's value)");
      }
    } else {
      options = std::move(probe);
    }
    applied.push_back(&setting);
  }
  if (!applied.empty()) {
    std::string list;
    for (const DeepSpeedSetting* setting : applied) {
      list += (list.empty() ? "" : ", ") + std::string("--") + setting->option + " " + setting->value;
    }
    options.deepspeed_notes.push_back(mapping.origin + ": " + list);
  }
  if (mapping.schedule.type != DeepSpeedScheduler::none) {
    static constexpr const char* kNames[] = {"", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
    options.deepspeed_notes.push_back(mapping.origin + ": learning rate follows DeepSpeed's " +
                                      kNames[static_cast<int>(mapping.schedule.type)] + " (" +
                                      (mapping.schedule.log_warmup ? "log" : "linear") +
                                      " warmup) instead of --lr_scheduler_type");
  }
  options.deepspeed_schedule = mapping.schedule;
  options.deepspeed_checks = mapping.checks;
  if (mapping.loss_scaling) options.loss_scaling = *mapping.loss_scaling;
  for (std::string& note : mapping.notes) options.deepspeed_notes.push_back(mapping.origin + ": " + std::move(note));
}

// Settings one option implies for others, as transformers' TrainingArguments derives them.
void apply_implied_settings(TrainOptions& o) {
  if (o.eval_strategy == EvalStrategy::steps || o.eval_strategy == EvalStrategy::epoch) o.do_eval = true;
  if (o.eval_strategy == EvalStrategy::steps && o.eval_steps == 0) o.eval_steps = o.logging_steps;
  if (o.load_best_model_at_end && o.metric_for_best_model.empty()) o.metric_for_best_model = "loss";
  if (!o.metric_for_best_model.empty() && !o.greater_is_better) {
    o.greater_is_better = !o.metric_for_best_model.ends_with("loss");
  }
  if (o.torch_dtype == "bfloat16" && !o.bf16) o.bf16 = true;
  if (o.torch_dtype == "float16") o.fp16 = true;
}

// --report_to: one name, or several separated by commas (TrainingArguments takes a list);
// integrations this trainer does not have are refused with what it writes instead.
void check_report_to(const std::string& value) {
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    const std::string name = value.substr(start, end - start);
    if (name == "none" && value != "none") throw UsageError("--report_to none cannot be combined with other names");
    if (name != "tensorboard" && name != "all" && name != "none") {
      throw UsageError("--report_to " + name + " is not available: this trainer writes TensorBoard event files "
                       "(--report_to tensorboard, the default; 'all' means the same) and metrics.jsonl in output_dir, "
                       "which other tools can import (e.g. wandb sync --sync-tensorboard); or none");
    }
    start = end + 1;
  }
}

// The evaluation figures --metric_for_best_model may name (with or without eval_).
constexpr std::string_view kBestModelMetrics[] = {"loss", "perplexity", "bits_per_byte"};

// --save_strategy best and --load_best_model_at_end, with transformers' rules.
void check_best_model_options(const TrainOptions& o) {
  const EvalStrategy eval = effective_eval_strategy(o);
  if (!o.metric_for_best_model.empty()) {
    const std::string_view name = std::string_view(o.metric_for_best_model).starts_with("eval_")
                                      ? std::string_view(o.metric_for_best_model).substr(5)
                                      : std::string_view(o.metric_for_best_model);
    require(std::find(std::begin(kBestModelMetrics), std::end(kBestModelMetrics), name) != std::end(kBestModelMetrics),
            "--metric_for_best_model " + o.metric_for_best_model + " is not an evaluation figure of this trainer: "
            "loss, perplexity or bits_per_byte (eval_loss, eval_perplexity, eval_bits_per_byte)");
  }
  if (o.save_strategy == SaveStrategy::best) {
    require(!o.metric_for_best_model.empty(),
            "--save_strategy best needs --metric_for_best_model (e.g. loss) to rank the evaluations");
    require(eval != EvalStrategy::no,
            "--save_strategy best saves when an evaluation finds a new best: give --eval_strategy steps or epoch");
  }
  if (!o.load_best_model_at_end) return;
  require(eval != EvalStrategy::no, "--load_best_model_at_end needs evaluations during training: give --eval_strategy steps or epoch");
  if (o.save_strategy == SaveStrategy::best) return;
  require((eval == EvalStrategy::steps && o.save_strategy == SaveStrategy::steps) ||
              (eval == EvalStrategy::epoch && o.save_strategy == SaveStrategy::epoch),
          "--load_best_model_at_end needs --save_strategy to match --eval_strategy (both steps or both epoch), or "
          "--save_strategy best: the best model must have a checkpoint to load");
  require(eval != EvalStrategy::steps || (o.save_steps > 0 && o.save_steps % o.eval_steps == 0),
          "--load_best_model_at_end needs --save_steps to be a multiple of --eval_steps (" + std::to_string(o.eval_steps) +
              "), so that every evaluated step has a checkpoint");
}

}  // namespace

std::string train_help() { return help_text<T>(kTrainUsage, kTrainTable); }
std::string options_yaml(const TrainOptions& o) { return values_yaml<T>(kTrainTable, o); }
std::string generate_help() { return help_text<G>(kGenerateUsage, kGenerateTable); }
std::string tokenizer_help() { return help_text<K>(kTokenizerUsage, kTokenizerTable); }

Command parse_command_line(std::span<const std::string> args) {
  Command command;
  if (!args.empty() && !args[0].starts_with("-")) {
    if (args[0] == "generate") {
      command.subcommand = Subcommand::generate;
    } else if (args[0] == "tokenizer") {
      command.subcommand = Subcommand::tokenizer;
    } else if (args[0] != "train") {
      throw UsageError("unknown subcommand '" + args[0] + "' (expected train, generate or tokenizer)");
    }
    args = args.subspan(1);
  }
  if (command.subcommand == Subcommand::generate) {
    if (asks_for_help<G>(kGenerateTable, args)) return command.help = generate_help(), command;
    GivenOptions<G> given;
    parse_options<G>(kGenerateTable, args, command.generate, given);
    validate(command.generate);
  } else if (command.subcommand == Subcommand::tokenizer) {
    if (asks_for_help<K>(kTokenizerTable, args)) return command.help = tokenizer_help(), command;
    GivenOptions<K> given;
    parse_options<K>(kTokenizerTable, args, command.tokenizer, given);
    validate(command.tokenizer);
  } else {
    if (asks_for_help<T>(kTrainTable, args)) return command.help = train_help(), command;
    GivenOptions<T> given;
    parse_options<T>(kTrainTable, args, command.train, given);
    if (!command.train.deepspeed.empty()) apply_deepspeed(command.train, given);
    apply_implied_settings(command.train);
    validate(command.train);
  }
  return command;
}

std::uint64_t max_shard_bytes(const TrainOptions& o) {
  const std::string& text = o.save_safetensors_max_shard_size;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  static const std::pair<const char*, std::uint64_t> kUnits[] = {
      {"", 1},          {"B", 1},           {"KB", 1000},       {"MB", 1000'000},     {"GB", 1000'000'000},
      {"TB", 1000'000'000'000}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}};
  const std::string unit = text.substr(digits);
  const auto found = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return unit == u.first; });
  const std::uint64_t count = parse_unsigned(std::string_view(text).substr(0, digits), 1, UINT64_MAX).value_or(0);
  require(count > 0 && found != std::end(kUnits) && count <= UINT64_MAX / found->second,
          "--save_safetensors_max_shard_size must be a positive size such as 5GB, 200MB, 512KiB or 1000000, got '" + text +
              "'");
  return count * found->second;
}

void validate(const TrainOptions& o) {
  require(o.do_train || o.do_eval, "nothing to do: give --do_train and/or --do_eval");
  require(!o.model_revision.empty(), "--model_revision must not be empty (main is the default branch)");
  max_shard_bytes(o);
  require(!o.output_dir.empty(), "--output_dir is required");
  require(o.dataset_name.empty() || (o.train_file.empty() && o.validation_file.empty()),
          "--dataset_name and --train_file / --validation_file name two datasets: give one of them");
  require(o.dataset_name.empty() || !o.streaming, "--streaming reads --train_file; --dataset_name builds the token cache");
  require(!o.dataset_revision.empty(), "--dataset_revision must not be empty (main is the default branch)");
  require(o.preprocessing_num_workers >= 0 && o.preprocessing_num_workers <= 64,
          "--preprocessing_num_workers must be between 0 and 64");
  require(!o.dataset_name.empty() || !o.train_file.empty() || (!o.do_train && !o.validation_file.empty()),
          o.do_train ? "--do_train needs --train_file or --dataset_name"
                     : "--do_eval needs --validation_file, --train_file or --dataset_name");
  require(o.model_name_or_path.empty() || (o.config_name.empty() && o.config_overrides.empty()),
          "--config_name and --config_overrides make a fresh model; they cannot be combined with --model_name_or_path");
  // Bounds far past any real batch, so that the global batch (times the world size) and the
  // offsets computed from it cannot overflow.
  require(o.per_device_train_batch_size >= 1 && o.per_device_train_batch_size <= kMaxBatch,
          "--per_device_train_batch_size must be in [1, " + std::to_string(kMaxBatch) + "]");
  require(o.per_device_eval_batch_size >= 1 && o.per_device_eval_batch_size <= kMaxBatch,
          "--per_device_eval_batch_size must be in [1, " + std::to_string(kMaxBatch) + "]");
  require(o.gradient_accumulation_steps >= 1 && o.gradient_accumulation_steps <= kMaxAccumulation,
          "--gradient_accumulation_steps must be in [1, " + std::to_string(kMaxAccumulation) + "]");
  require(o.per_device_train_batch_size * o.gradient_accumulation_steps <= kMaxBatch,
          "--per_device_train_batch_size times --gradient_accumulation_steps must be at most " + std::to_string(kMaxBatch));
  require(o.learning_rate >= 0, "--learning_rate must not be negative");
  require(o.weight_decay >= 0, "--weight_decay must not be negative");
  require(o.adam_beta1 >= 0 && o.adam_beta1 < 1, "--adam_beta1 must be in [0, 1)");
  require(o.adam_beta2 >= 0 && o.adam_beta2 < 1, "--adam_beta2 must be in [0, 1)");
  require(o.adam_epsilon > 0, "--adam_epsilon must be positive");
  require(o.max_grad_norm >= 0, "--max_grad_norm must not be negative (0 turns clipping off)");
  require(o.max_steps == -1 || o.max_steps >= 1, "--max_steps must be -1 (use epochs) or at least 1");
  require(o.max_steps >= 1 || o.num_train_epochs > 0, "--num_train_epochs must be positive");
  require(o.num_train_epochs <= kMaxEpochs, "--num_train_epochs must be at most 1e6");
  require(o.warmup_steps >= 0, "--warmup_steps must not be negative");
  require(o.warmup_ratio >= 0 && o.warmup_ratio <= 1, "--warmup_ratio must be in [0, 1]");
  require(o.validation_split_percentage >= 0 && o.validation_split_percentage < 100,
          "--validation_split_percentage must be in [0, 100)");
  require(!o.do_eval || !o.validation_file.empty() || !o.dataset_name.empty() || o.validation_split_percentage > 0,
          "--do_eval needs --validation_file or a --validation_split_percentage above 0");
  require(o.block_size == 0 || o.block_size >= 2,
          "--block_size must be 0 (the model's n_positions) or at least 2 (a block of one token has no next token to predict)");
  require(!o.streaming || o.max_steps >= 1, "--streaming needs --max_steps (a stream's length is not known up front)");
  require(!o.streaming || o.max_train_samples == -1, "--max_train_samples cannot be combined with --streaming");
  require(o.max_train_samples == -1 || o.max_train_samples >= 1, "--max_train_samples must be -1 or at least 1");
  require(o.max_eval_samples == -1 || o.max_eval_samples >= 1, "--max_eval_samples must be -1 or at least 1");
  require(o.seed >= 0, "--seed must not be negative");
  require(o.logging_steps >= 1, "--logging_steps must be at least 1");
  require(o.profile_steps >= 0, "--profile_steps must not be negative (0 = off)");
  check_report_to(o.report_to);
  require(o.eval_steps >= 0, "--eval_steps must not be negative");
  require(!(o.eval_strategy == EvalStrategy::epoch && o.streaming),
          "--eval_strategy epoch needs epochs of known length; with --streaming use --eval_strategy steps");
  check_best_model_options(o);
  require(o.optim == "adamw_torch" || o.optim == "adamw_torch_fused" || o.optim == "adamw_hf",
          "--optim " + o.optim + " is not available: this trainer trains with AdamW (adamw_torch, adamw_torch_fused "
          "and adamw_hf all mean its own fused AdamW)");
  require(o.torch_dtype.empty() || o.torch_dtype == "auto" || o.torch_dtype == "float32" ||
              o.torch_dtype == "bfloat16" || o.torch_dtype == "float16",
          "--torch_dtype must be auto, float32, bfloat16 or float16, got '" + o.torch_dtype + "'");
  require(!(o.torch_dtype == "float16" && o.bf16.value_or(false)) && !(o.torch_dtype == "bfloat16" && o.fp16),
          "--torch_dtype " + o.torch_dtype + " disagrees with --" + (o.torch_dtype == "float16" ? "bf16" : "fp16"));
  require(o.dataloader_num_workers >= 0, "--dataloader_num_workers must not be negative");
  require(o.save_steps >= 0, "--save_steps must not be negative");
  require(!(o.save_strategy == SaveStrategy::epoch && o.streaming),
          "--save_strategy epoch needs epochs of known length; with --streaming use --save_strategy steps");
  require(o.save_total_limit >= 0, "--save_total_limit must not be negative");
  require(o.threads >= 0 && o.threads <= kMaxThreads, "--threads must be between 0 and 1024");
  require(o.nproc >= 0 && o.nproc <= 1024, "--nproc must be between 0 and 1024");
  require(o.ddp_bucket_cap_mb >= 1, "--ddp_bucket_cap_mb must be at least 1");
  require(o.offload_chunk_mb >= 1 && o.offload_chunk_mb <= kMaxChunkMb,
          "--offload_chunk_mb must be in [1, " + std::to_string(kMaxChunkMb) + "] (MiB)");
  require(o.offload_delayed_update >= 0, "--offload_delayed_update must not be negative (0 = never)");
  require(o.offload_delayed_update == 0 || o.offload == Offload::optimizer,
          "--offload_delayed_update needs --offload optimizer (it delays the offloaded optimizer's update)");
  require(!(o.fp16 && o.bf16.value_or(false)), "--fp16 and --bf16 cannot both be on");
  require(!(o.shard_parameters && o.offload_delayed_update > 0),
          "--offload_delayed_update does not combine with --shard_parameters (each rank updates its own shard at once)");
  require(!o.offload_parameters || o.shard_parameters,
          "--offload_parameters offloads the parameter shards of --shard_parameters (ZeRO-3): give both");
}

void validate(const GenerateOptions& o) {
  require(!o.model.empty(), "generate needs --model DIR or NAME");
  require(!o.model_revision.empty(), "--model_revision must not be empty (main is the default branch)");
  require(o.max_new_tokens >= 1, "--max_new_tokens must be at least 1");
  require(o.temperature >= 0, "--temperature must not be negative (0 = greedy)");
  require(o.top_k >= 0, "--top_k must not be negative (0 = no cut)");
  require(o.seed >= 0, "--seed must not be negative");
  require(o.threads >= 0 && o.threads <= kMaxThreads, "--threads must be between 0 and 1024");
}

void validate(const TokenizerOptions& o) {
  require(!o.train_file.empty(), "tokenizer needs --train_file FILE|DIR");
  require(!o.output_dir.empty(), "tokenizer needs --output_dir DIR");
  require(o.vocab_size >= 1 && o.vocab_size <= (std::int64_t{1} << 31), "--vocab_size must be between 1 and 2^31");
  require(o.min_frequency >= 0, "--min_frequency must not be negative");
  require(!special_token_list(o).empty(), "--special_tokens needs at least one token: the first ends documents (EOS)");
  require(o.threads >= 0 && o.threads <= kMaxThreads, "--threads must be between 0 and 1024");
}

std::vector<std::string> special_token_list(const TokenizerOptions& o) {
  std::vector<std::string> tokens;
  std::size_t pos = 0;
  const std::string_view text = o.special_tokens;
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  while ((pos = text.find_first_not_of(kSpace, pos)) != std::string_view::npos) {
    const std::size_t end = std::min(text.find_first_of(kSpace, pos), text.size());
    tokens.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return tokens;
}

}  // namespace llmrdzv::train
