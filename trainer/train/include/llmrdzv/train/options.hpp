// Every setting of the `trainer` command, as plain structs. The defaults written here are the
// defaults users get: the option table (cli.cpp) prints them in --help by reading a
// default-constructed struct, so they are stated once (the training engine's, once, in
// EngineOptions). Options with a fixed set of values are enums, parsed once from (and written back
// as) the names users type (option_names.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/engine/engine_options.hpp"
#include "llmrdzv/engine/option_names.hpp"

namespace llmrdzv::train {

// The engine's enums (engine_options.hpp) and the name helpers, as options of this CLI.
using engine::Offload;
using engine::OffloadGradientSync;
using engine::option_name;
using engine::parse_option_name;

// run_clm's --lr_scheduler_type values this trainer implements (lr_schedule.hpp).
enum class LrSchedulerType { linear, cosine, constant, constant_with_warmup };
// Its names, indexed by its values (option_names.hpp).
inline constexpr std::array<std::string_view, 4> kLrSchedulerTypeNames{"linear", "cosine", "constant",
                                                                        "constant_with_warmup"};
constexpr std::span<const std::string_view> option_names(LrSchedulerType) { return kLrSchedulerTypeNames; }

// transformers' --save_strategy: when training checkpoints are written (the final model is
// written to output_dir in every case); best: whenever an evaluation finds a new best
// --metric_for_best_model.
enum class SaveStrategy { no, steps, epoch, best };
inline constexpr std::array<std::string_view, 4> kSaveStrategyNames{"no", "steps", "epoch", "best"};
constexpr std::span<const std::string_view> option_names(SaveStrategy) { return kSaveStrategyNames; }

// transformers' --eval_strategy (formerly --evaluation_strategy): when to evaluate during
// training. automatic ("auto"), the default: steps when --eval_steps is above 0, else no, the
// meaning --eval_steps had here before the option existed.
enum class EvalStrategy { automatic, no, steps, epoch };
inline constexpr std::array<std::string_view, 4> kEvalStrategyNames{"auto", "no", "steps", "epoch"};
constexpr std::span<const std::string_view> option_names(EvalStrategy) { return kEvalStrategyNames; }

// What only a DeepSpeed config (--deepspeed) sets: DeepSpeed's own learning-rate curves, which the
// run follows instead of --lr_scheduler_type when the config has a "scheduler" block (as HF's
// Trainer hands the schedule to DeepSpeed then). Their maths is in lr_schedule.cpp.
enum class DeepSpeedScheduler { none, warmup_lr, warmup_decay_lr, warmup_cosine_lr };
struct DeepSpeedSchedule {
  DeepSpeedScheduler type = DeepSpeedScheduler::none;
  bool log_warmup = true;        // warmup_type "log" (DeepSpeed's default) rather than "linear"
  double warmup_min_lr = 0;      // WarmupLR, WarmupDecayLR: the rate warmup starts from
  double warmup_min_ratio = 0;   // WarmupCosineLR: the same as a share of the learning rate
  double cos_min_ratio = 1e-4;   // WarmupCosineLR: the share the cosine ends at (DeepSpeed's default)
};

// fp16's dynamic loss scaling (LossScaler, precision.hpp). The defaults are transformers' (torch's
// GradScaler); a DeepSpeed config's "fp16" block sets DeepSpeed's (initial_scale_power,
// loss_scale_window, hysteresis, consecutive_hysteresis, min_loss_scale).
struct LossScaling {
  double initial_scale = 65536.0;
  std::int64_t growth_interval = 2000;  // good steps in a row before the scale doubles
  std::int64_t hysteresis = 1;          // overflows (without a growth between) before the scale halves
  bool consecutive_hysteresis = false;  // a good step restores the hysteresis
  double min_scale = 1.0;
};

// What HF's Trainer checks of a DeepSpeed config once the world size and the number of steps are
// known (trainer_config_process / _finalize): explicit values there must equal the run's.
struct DeepSpeedChecks {
  std::optional<std::int64_t> train_batch_size;  // world x micro-batch x accumulation
  std::optional<std::int64_t> total_num_steps;   // scheduler.params.total_num_steps
};

// `trainer [train]`: run_clm.py's names where they apply.
struct TrainOptions {
  // Model and tokenizer.
  std::string model_name_or_path;  // HF directory or hub name (hub cache) to start from; empty = a fresh model
  std::string config_name;         // config.json (or its directory) for a fresh model
  std::string model_type;          // run_clm's: a fresh model's family (its config defaults) without config_name
  std::string config_overrides;    // "n_embd=256,n_layer=4" applied to the config
  std::string tokenizer_name;      // directory with vocab.json + merges.txt or tokenizer.json; empty = the model's (a fresh model: bytes)
  std::string model_revision = "main";  // the hub revision (branch, tag or commit) of the three names above
  bool low_cpu_mem_usage = false;  // memory-map the model file instead of reading it
  bool gradient_checkpointing = false;

  // Data.
  std::string dataset_name;         // run_clm's: a hub dataset in the offline caches, or a save_to_disk folder
  std::string dataset_config_name;  // its config; empty = the only (or default) one
  std::string dataset_revision = "main";  // the hub cache revision of dataset_name
  std::string text_column_name;     // empty = "text" when there, else the first column (run_clm's rule)
  std::int64_t preprocessing_num_workers = 0;  // threads tokenising dataset rows; 0 = one
  bool overwrite_cache = false;     // rebuild the token cache even when it matches
  bool keep_linebreaks = true;      // run_clm's: false reads a text file a document per line, breaks dropped
  std::string train_file;       // text/jsonl file or folder
  std::string validation_file;  // empty = split off validation_split_percentage of train_file
  std::int64_t validation_split_percentage = 5;
  std::int64_t block_size = 0;  // 0 = the model's n_positions (capped at 1024)
  bool streaming = false;
  std::int64_t max_train_samples = -1;  // -1 = all blocks
  std::int64_t max_eval_samples = -1;
  std::string cache_dir;        // run_clm's: the Hugging Face hub cache; empty = huggingface_hub's ($HF_HUB_CACHE, ...)
  std::string token_cache_dir;  // token cache; empty = <output_dir>/token-cache

  // Optimisation.
  std::int64_t per_device_train_batch_size = 8;
  std::int64_t per_device_eval_batch_size = 8;
  std::int64_t gradient_accumulation_steps = 1;
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;  // 0 = no clipping
  double num_train_epochs = 3.0;
  std::int64_t max_steps = -1;  // > 0 overrides num_train_epochs
  LrSchedulerType lr_scheduler_type = LrSchedulerType::linear;
  std::int64_t warmup_steps = 0;  // > 0 overrides warmup_ratio
  double warmup_ratio = 0.0;
  std::int64_t seed = 42;

  // What to run, where to write.
  bool do_train = false;
  bool do_eval = false;
  std::string output_dir;
  bool overwrite_output_dir = false;
  std::string resume_from_checkpoint;  // a checkpoint directory, or "latest" in output_dir
  std::int64_t logging_steps = 50;
  std::int64_t profile_steps = 0;  // > 0: a Chrome trace of this many steps (after the first) per rank
  std::string report_to = "tensorboard";  // tensorboard (also "all") | none: TensorBoard event files from rank 0
  std::string logging_dir;  // TensorBoard's directory; empty = <output_dir>/runs/<date>_<host>, a resumed run's own
  EvalStrategy eval_strategy = EvalStrategy::automatic;  // not no: --do_eval too (transformers' rule)
  std::int64_t eval_steps = 0;  // with eval_strategy steps: 0 = --logging_steps; auto: 0 = evaluate only at the end
  SaveStrategy save_strategy = SaveStrategy::steps;
  std::int64_t save_steps = 500;  // with save_strategy steps; 0 = save only at the end
  std::int64_t save_total_limit = 0;  // keep the newest K checkpoints; 0 = keep all
  std::string save_safetensors_max_shard_size = "5GB";  // the final model's shards (max_shard_bytes)
  std::string metric_for_best_model;       // loss, perplexity (eval_ prefix optional); empty = none
  std::optional<bool> greater_is_better;   // unset = not for names ending in "loss" (transformers' rule)
  bool load_best_model_at_end = false;     // export (and evaluate) the best checkpoint's model at the end

  // Machine.
  std::int64_t nproc = 0;    // > 0: start a local rdzvd and this many ranks (standalone_launcher.hpp)
  std::int64_t threads = 0;  // torch intra-op threads; 0 = torch's default
  bool use_cpu = false;      // stay on the CPU even when CUDA is available

  // Precision (precision.hpp resolves the defaults once the device is known).
  std::optional<bool> bf16;  // bf16 parameters/gradients, fp32 master weights; unset = on for GPUs that support it
  bool fp16 = false;         // fp16 parameters/gradients with dynamic loss scaling, fp32 master weights
  std::optional<bool> tf32;  // TF32 tensor cores for fp32 matmuls and convolutions; unset = on for CUDA
  std::string torch_dtype;   // run_clm's model dtype: auto | float32 | bfloat16 | float16 (the last two turn on --bf16 / --fp16)
  LossScaling loss_scaling;  // fp16 (set by --deepspeed only)

  // A DeepSpeed config (a file, or its JSON inline), mapped onto the options above with HF
  // Trainer's rules (deepspeed_config.hpp); what it sets that no option has:
  std::string deepspeed;
  DeepSpeedSchedule deepspeed_schedule;
  DeepSpeedChecks deepspeed_checks;
  std::vector<std::string> deepspeed_notes;  // for the run log: keys taken as tuning or with no effect here

  // Accepted for run_clm.py and TrainingArguments command lines, with their meaning here.
  std::string optim = "adamw_torch";  // the optimizer: AdamW, this trainer's own fused kernels
  bool use_fast_tokenizer = true;     // one tokenizer implementation here, with the fast tokenizers' ids
  std::int64_t dataloader_num_workers = 0;  // no effect: blocks come from the memory-mapped token cache

  // Data parallelism (read by the training engine through engine_options() below).
  Offload offload = engine::EngineOptions{}.offload;
  std::int64_t offload_chunk_mb = engine::EngineOptions{}.offload_chunk_mb;
  std::int64_t offload_delayed_update = engine::EngineOptions{}.offload_delayed_update;
  OffloadGradientSync offload_gradient_sync = engine::EngineOptions{}.offload_gradient_sync;
  std::int64_t ddp_bucket_cap_mb = engine::EngineOptions{}.ddp_bucket_cap_mb;
  bool shard_parameters = engine::EngineOptions{}.shard_parameters;
  // ZeRO-3's parameter offload (DeepSpeed's offload_param): the parameter shards in host memory.
  // Only where they are there already (a CPU run); a GPU run is refused by the sharded engine.
  bool offload_parameters = false;

  // The YAML file the values came from, if any (for messages).
  std::string config;
};

// `trainer generate`: sample from a saved model.
struct GenerateOptions {
  std::string model;           // HF directory (config.json, model.safetensors, tokenizer files) or hub name
  std::string tokenizer_name;  // empty = the tokenizer files in `model` (refused if it has none)
  std::string model_revision = "main";  // hub revision of the two names above
  std::string cache_dir;       // the Hugging Face hub cache; empty = huggingface_hub's
  std::string prompt;
  std::int64_t max_new_tokens = 100;
  double temperature = 1.0;  // 0 = greedy
  std::int64_t top_k = 50;   // 0 = no top-k cut
  std::int64_t seed = 42;
  std::int64_t threads = 0;
  bool use_cpu = false;
  std::string config;
};

// `trainer tokenizer`: train a byte-level BPE vocabulary (HF's ByteLevelBPETokenizer.train).
struct TokenizerOptions {
  std::string train_file;                        // text file, .jsonl file or folder, as for training
  std::int64_t vocab_size = 30000;               // HF's defaults
  std::int64_t min_frequency = 2;
  std::string special_tokens = "<|endoftext|>";  // separated by whitespace; the first is the EOS
  std::string output_dir;
  std::int64_t threads = 0;                      // 0 = every core
  std::string config;
};

// When the run evaluates during training: --eval_strategy, with auto resolved (steps when
// --eval_steps is above 0 and --do_eval is on, else no).
inline EvalStrategy effective_eval_strategy(const TrainOptions& o) {
  if (o.eval_strategy != EvalStrategy::automatic) return o.eval_strategy;
  return o.do_eval && o.eval_steps > 0 ? EvalStrategy::steps : EvalStrategy::no;
}

// The options the training engines read, taken from `options`: the one place trainer/train
// turns its options into the engine's.
inline engine::EngineOptions engine_options(const TrainOptions& options) {
  return {.use_cpu = options.use_cpu,
          .threads = options.threads,
          .offload = options.offload,
          .offload_chunk_mb = options.offload_chunk_mb,
          .offload_delayed_update = options.offload_delayed_update,
          .offload_gradient_sync = options.offload_gradient_sync,
          .ddp_bucket_cap_mb = options.ddp_bucket_cap_mb,
          .shard_parameters = options.shard_parameters};
}

}  // namespace llmrdzv::train
