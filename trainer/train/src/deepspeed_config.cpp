// The DeepSpeed config reader of deepspeed_config.hpp. Its key tables follow DeepSpeed's config
// schema (deepspeed/runtime/config.py, zero/config.py, zero/offload_config.py) and HF Trainer's
// mapping of it onto TrainingArguments (trainer_config_process and trainer_config_finalize).
#include "deepspeed_config.hpp"

#include <cmath>
#include <filesystem>
#include <functional>
#include <string_view>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/train/cli.hpp"

namespace llmrdzv::train {
namespace {

bool is_auto(const json::Value& value) { return value.is_string() && value.as_string() == "auto"; }

// A value as the message quotes it.
std::string shown(const json::Value& value) {
  const std::string text = json::write(value);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

class Walker {
 public:
  explicit Walker(DeepSpeedMapping& out) : out_(out) {}

  void root(const json::Value& config) {
    const json::Object& members = object(config, "");
    for (const auto& [name, value] : members) {
      if (name == "train_batch_size") {
        if (!is_auto(value)) out_.checks.train_batch_size = integer(value, name, 1);
      } else if (name == "train_micro_batch_size_per_gpu") {
        set_integer("per_device_train_batch_size", value, name, 1);
      } else if (name == "gradient_accumulation_steps") {
        set_integer("gradient_accumulation_steps", value, name, 1);
      } else if (name == "gradient_clipping") {
        set_number("max_grad_norm", value, name);
      } else if (name == "fp16") {
        fp16(value);
      } else if (name == "bf16" || name == "bfloat16") {  // DeepSpeed reads both spellings
        bf16(value, name);
      } else if (name == "optimizer") {
        optimizer(value);
      } else if (name == "scheduler") {
        scheduler(value);
      } else if (name == "zero_optimization") {
        zero(value);
      } else if (name == "steps_per_print") {
        note(name, "no effect here: --logging_steps sets how often the trainer logs");
      } else if (name == "wall_clock_breakdown" || name == "memory_breakdown" || name == "dump_state") {
        if (truthy(value, name)) note(name, "no effect here: --profile_steps records where a step's time goes");
      } else if (name == "zero_allow_untested_optimizer" || name == "zero_force_ds_cpu_optimizer") {
        note(name, "no effect here: the optimizer is always this trainer's AdamW");
      } else if (name == "prescale_gradients" || name == "gradient_predivide_factor") {
        note(name, "no effect here: gradients are averaged over the ranks once, after their reduction");
      } else if (name == "activation_checkpointing") {
        object(value, name);
        note(name, "no effect here (DeepSpeed's checkpointing for Megatron-style models, which HF's Trainer does not use): "
                   "--gradient_checkpointing recomputes activations");
      } else if (name == "flops_profiler" || name == "tensorboard" || name == "wandb" || name == "csv_monitor" ||
                 name == "comet" || name == "comms_logger") {
        object(value, name);
        note(name, "no effect here: the trainer writes metrics.jsonl and TensorBoard event files (--report_to), and "
                   "--profile_steps records a profile");
      } else if (name == "checkpoint") {
        object(value, name);
        note(name, "no effect here: checkpoints are this trainer's (checkpoint-N in --output_dir)");
      } else if (name == "amp") {
        fail(name, "NVIDIA Apex's mixed precision is not available here: use \"bf16\" or \"fp16\" {\"enabled\": true}, or --bf16 / --fp16");
      } else if (name == "communication_data_type" || name == "data_types") {
        if (!value.is_null()) {
          fail(name, "gradients are reduced and accumulated in the type --bf16/--fp16 and --offload choose here; "
                     "remove the key");
        }
      } else {
        unknown(name);
      }
    }
  }

 private:
  // --- value kinds ---------------------------------------------------------------------------
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw UsageError(out_.origin + ": \"" + key + "\": " + problem);
  }
  [[noreturn]] void unknown(const std::string& key) const {
    fail(key, "is not a DeepSpeed setting this trainer knows; refusing it rather than ignoring it (trainer(1), "
              "DEEPSPEED CONFIGS, lists the keys it takes)");
  }
  const json::Object& object(const json::Value& value, const std::string& key) const {
    if (!value.is_object()) fail(key.empty() ? "(the config)" : key, "expects an object, got " + shown(value));
    return value.as_object();
  }
  std::int64_t integer(const json::Value& value, const std::string& key, std::int64_t min) const {
    std::int64_t result = 0;
    if (value.is_integer()) {
      result = value.as_integer();
    } else if (value.is_number() && std::isfinite(value.as_double()) && std::trunc(value.as_double()) == value.as_double() &&
               std::abs(value.as_double()) < 9e15) {
      result = static_cast<std::int64_t>(value.as_double());  // 2e8 as JSON writes it from Python
    } else {
      fail(key, "expects an integer or \"auto\", got " + shown(value));
    }
    if (result < min) fail(key, "must be at least " + std::to_string(min) + ", got " + std::to_string(result));
    return result;
  }
  double number(const json::Value& value, const std::string& key) const {
    if (!value.is_number()) fail(key, "expects a number or \"auto\", got " + shown(value));
    return value.as_double();
  }
  bool boolean(const json::Value& value, const std::string& key) const {
    if (!value.is_bool()) fail(key, "expects true or false, got " + shown(value));
    return value.as_bool();
  }
  // A flag DeepSpeed reads as a boolean; a tuning flag's false needs no note.
  bool truthy(const json::Value& value, const std::string& key) const { return boolean(value, key); }
  std::string text(const json::Value& value, const std::string& key) const {
    if (!value.is_string()) fail(key, "expects a string, got " + shown(value));
    return value.as_string();
  }

  void set(const std::string& option, std::string value, const std::string& key) {
    out_.settings.push_back({option, std::move(value), key});
  }
  void set_integer(const std::string& option, const json::Value& value, const std::string& key, std::int64_t min) {
    if (!is_auto(value)) set(option, std::to_string(integer(value, key, min)), key);
  }
  void set_number(const std::string& option, const json::Value& value, const std::string& key) {
    if (!is_auto(value)) set(option, json::write(json::Value(number(value, key))), key);
  }
  void set_flag(const std::string& option, const json::Value& value, const std::string& key) {
    if (!is_auto(value)) set(option, boolean(value, key) ? "true" : "false", key);
  }
  void note(const std::string& key, const std::string& what) { out_.notes.push_back(key + ": " + what); }

  // --- blocks --------------------------------------------------------------------------------
  void fp16(const json::Value& block) {
    LossScaling scaling;
    for (const auto& [name, value] : object(block, "fp16")) {
      const std::string key = "fp16." + name;
      if (name == "enabled") {
        set_flag("fp16", value, key);
      } else if (name == "loss_scale") {
        if (number(value, key) != 0) {
          fail(key, "a static loss scale is not available here (the trainer scales dynamically, as DeepSpeed does with "
                    "0): set it to 0");
        }
      } else if (name == "initial_scale_power") {
        const std::int64_t power = integer(value, key, 0);
        if (power > 62) fail(key, "must be at most 62, got " + std::to_string(power));
        scaling.initial_scale = std::ldexp(1.0, static_cast<int>(power));
      } else if (name == "loss_scale_window") {
        scaling.growth_interval = integer(value, key, 1);
      } else if (name == "hysteresis") {
        scaling.hysteresis = integer(value, key, 1);
      } else if (name == "consecutive_hysteresis") {
        scaling.consecutive_hysteresis = boolean(value, key);
      } else if (name == "min_loss_scale") {
        scaling.min_scale = number(value, key);
        if (!(scaling.min_scale > 0)) fail(key, "must be positive, got " + shown(value));
      } else if (name == "auto_cast") {
        if (boolean(value, key)) note(key, "no effect here: the model computes in the --fp16 type throughout");
      } else if (name == "fp16_master_weights_and_grads") {
        if (boolean(value, key)) fail(key, "master weights stay fp32 here; remove the key");
      } else {
        unknown(key);
      }
    }
    out_.loss_scaling = scaling;
  }

  void bf16(const json::Value& block, const std::string& block_name) {
    for (const auto& [name, value] : object(block, block_name)) {
      const std::string key = block_name + "." + name;
      if (name == "enabled") {
        set_flag("bf16", value, key);
      } else if (name == "immediate_grad_update" || name == "check_grad_overflow") {
        note(key, "no effect here");
      } else {
        unknown(key);
      }
    }
  }

  // The optimizer and scheduler blocks share one shape: {"type": NAME, "params": {...}}.
  struct TypedBlock {
    std::string type;
    const json::Value* params = nullptr;
  };
  TypedBlock typed_block(const json::Value& block, const std::string& block_name) {
    TypedBlock out;
    for (const auto& [name, value] : object(block, block_name)) {
      if (name == "type") {
        out.type = text(value, block_name + ".type");
      } else if (name == "params") {
        out.params = &value;
      } else {
        unknown(block_name + "." + name);
      }
    }
    return out;
  }

  void optimizer(const json::Value& block) {
    const auto [type, params] = typed_block(block, "optimizer");
    std::string lower;
    for (const char c : type) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower != "adam" && lower != "adamw") {
      fail("optimizer.type", (type.empty() ? std::string("is missing") : "'" + type + "' is not available") +
                                 ": this trainer trains with AdamW (\"Adam\" or \"AdamW\")");
    }
    if (!params) return;
    for (const auto& [name, value] : object(*params, "optimizer.params")) {
      const std::string key = "optimizer.params." + name;
      if (name == "lr") {
        set_number("learning_rate", value, key);
      } else if (name == "betas") {
        if (is_auto(value)) continue;
        if (!value.is_array() || value.as_array().size() != 2) fail(key, "expects [beta1, beta2] or \"auto\", got " + shown(value));
        set_number("adam_beta1", value.as_array()[0], key);
        set_number("adam_beta2", value.as_array()[1], key);
      } else if (name == "eps") {
        set_number("adam_epsilon", value, key);
      } else if (name == "weight_decay") {
        set_number("weight_decay", value, key);
      } else if (name == "adam_w_mode") {
        if (!boolean(value, key)) {
          fail(key, "Adam with L2 regularisation is not available here: the trainer's AdamW decays weights "
                    "decoupled (adam_w_mode true, DeepSpeed's default)");
        }
      } else if (name == "bias_correction") {
        if (!boolean(value, key)) fail(key, "AdamW corrects its moments' bias here; remove the key");
      } else if (name == "amsgrad") {
        if (boolean(value, key)) fail(key, "AMSGrad is not available here; remove the key");
      } else if (name == "torch_adam" || name == "fused" || name == "foreach") {
        note(key, "no effect here: AdamW runs this trainer's own fused kernels");
      } else {
        unknown(key);
      }
    }
  }

  void scheduler(const json::Value& block) {
    const auto [type, params] = typed_block(block, "scheduler");
    DeepSpeedSchedule& schedule = out_.schedule;
    if (type == "WarmupLR") {
      schedule.type = DeepSpeedScheduler::warmup_lr;
    } else if (type == "WarmupDecayLR") {
      schedule.type = DeepSpeedScheduler::warmup_decay_lr;
    } else if (type == "WarmupCosineLR") {
      schedule.type = DeepSpeedScheduler::warmup_cosine_lr;
    } else {
      fail("scheduler.type", (type.empty() ? std::string("is missing") : "'" + type + "' is not available") +
                                 ": WarmupLR, WarmupDecayLR and WarmupCosineLR are; or remove the block to use "
                                 "--lr_scheduler_type");
    }
    if (!params) return;
    const bool cosine = schedule.type == DeepSpeedScheduler::warmup_cosine_lr;
    for (const auto& [name, value] : object(*params, "scheduler.params")) {
      const std::string key = "scheduler.params." + name;
      const auto only = [&](bool cosine_key) {
        if (cosine_key != cosine) fail(key, "is not a parameter of " + type);
      };
      if (name == "warmup_num_steps") {
        set_integer("warmup_steps", value, key, 0);
      } else if (name == "warmup_type") {
        const std::string shape = text(value, key);
        if (shape != "log" && shape != "linear") fail(key, "must be \"log\" or \"linear\", got '" + shape + "'");
        schedule.log_warmup = shape == "log";
      } else if (name == "total_num_steps") {
        if (schedule.type == DeepSpeedScheduler::warmup_lr) fail(key, "is not a parameter of WarmupLR");
        if (!is_auto(value)) out_.checks.total_num_steps = integer(value, key, 1);
      } else if (name == "warmup_min_lr") {
        only(false);
        if (!is_auto(value)) schedule.warmup_min_lr = number(value, key);  // HF fills 0
      } else if (name == "warmup_max_lr") {
        only(false);
        set_number("learning_rate", value, key);
      } else if (name == "warmup_min_ratio" || name == "cos_min_ratio") {
        only(true);
        const double ratio = number(value, key);
        if (ratio < 0 || ratio > 1) fail(key, "must be in [0, 1], got " + shown(value));
        (name == "warmup_min_ratio" ? schedule.warmup_min_ratio : schedule.cos_min_ratio) = ratio;
      } else if (name == "last_batch_iteration") {
        if (integer(value, key, -1) != -1) fail(key, "resuming is --resume_from_checkpoint's job here; remove the key");
      } else {
        unknown(key);
      }
    }
  }

  void zero(const json::Value& block) {
    const json::Object& members = object(block, "zero_optimization");
    std::int64_t stage = 0;
    for (const auto& [name, value] : members) {
      if (name == "stage") stage = integer(value, "zero_optimization.stage", 0);
    }
    if (stage > 3) fail("zero_optimization.stage", "must be 0, 1, 2 or 3, got " + std::to_string(stage));
    if (stage == 3) set("shard_parameters", "true", "zero_optimization.stage");
    bool offloaded = false;
    for (const auto& [name, value] : members) {
      const std::string key = "zero_optimization." + name;
      if (name == "stage") {
        continue;
      } else if (name == "offload_optimizer") {
        offloaded = offload_optimizer(value, key);
      } else if (name == "cpu_offload") {  // DeepSpeed's older spelling of offload_optimizer cpu
        offloaded = boolean(value, key);
        set("offload", offloaded ? "optimizer" : "none", key);
      } else if (name == "offload_param") {
        offload_param(value, key, stage);
      } else if (name == "overlap_comm") {
        note(key, "no effect here: gradient reductions always overlap the backward pass");
      } else if (name == "contiguous_gradients") {
        note(key, "no effect here: with --offload optimizer gradients always land in one flat buffer");
      } else if (name == "allgather_bucket_size" || name == "reduce_bucket_size" || name == "allgather_partitions" ||
                 name == "reduce_scatter" || name == "round_robin_gradients") {
        note(key, "no effect here: --ddp_bucket_cap_mb and --offload_chunk_mb size the reductions and copies");
      } else if (name == "stage3_gather_16bit_weights_on_model_save" || name == "stage3_gather_fp16_weights_on_model_save") {
        // DeepSpeed's switch for saving the whole 16-bit model besides the ranks' partitions.
        note(key, "always on here: checkpoints and the final model hold the whole model in HF's layout, gathered and "
                  "written a unit at a time, beside each rank's optimizer shards");
      } else if (name == "elastic_checkpoint" || name == "load_from_fp32_weights" ||
                 name == "ignore_unused_parameters" || name == "legacy_stage1" || name == "memory_efficient_linear" ||
                 name == "zero_hpz_partition_size" || name == "mics_shard_size" || name == "sub_group_size" ||
                 name.starts_with("stage3_")) {
        note(key, stage == 3 ? "no effect here" : "no effect at stage " + std::to_string(stage));
      } else if (name == "zero_quantized_weights" || name == "zero_quantized_gradients" ||
                 name == "zero_quantized_nontrainable_weights") {
        if (boolean(value, key)) fail(key, "quantised ZeRO communication changes the maths and is not available here");
      } else {
        unknown(key);
      }
    }
    if (stage > 0 && stage < 3 && !offloaded) {
      note("zero_optimization.stage", "stage " + std::to_string(stage) +
                                          " without offload_optimizer: every rank holds the optimizer state here "
                                          "(plain data parallel, the same maths); --offload optimizer shards it in host memory");
    }
  }

  bool offload_optimizer(const json::Value& block, const std::string& block_key) {
    bool offloaded = false;
    for (const auto& [name, value] : object(block, block_key)) {
      const std::string key = block_key + "." + name;
      if (name == "device") {
        const std::string device = value.is_null() ? "none" : text(value, key);
        if (device == "cpu") {
          offloaded = true;
        } else if (device == "nvme") {
          fail(key, "offloading to NVMe (ZeRO-Infinity) is not available here: \"cpu\" keeps the optimizer state in host memory");
        } else if (device != "none") {
          fail(key, "must be \"cpu\" or \"none\", got '" + device + "'");
        }
        set("offload", offloaded ? "optimizer" : "none", key);
      } else if (name == "pin_memory") {
        note(key, "no effect here: the host buffers a GPU copies through are always pinned");
      } else if (name == "buffer_count" || name == "fast_init" || name == "pipeline_read" || name == "pipeline_write" ||
                 name == "pipeline") {
        note(key, "no effect here: --offload_chunk_mb sets the copy pipeline's chunks");
      } else if (name == "ratio") {
        if (number(value, key) != 1.0) {
          fail(key, "offloading part of the optimizer state is not available here: remove the key (1.0, all of it, is what --offload optimizer does)");
        }
      } else if (name == "nvme_path") {
        fail(key, "offloading to NVMe (ZeRO-Infinity) is not available here");
      } else {
        unknown(key);
      }
    }
    return offloaded;
  }

  void offload_param(const json::Value& block, const std::string& block_key, std::int64_t stage) {
    for (const auto& [name, value] : object(block, block_key)) {
      const std::string key = block_key + "." + name;
      if (name == "device") {
        const std::string device = value.is_null() ? "none" : text(value, key);
        if (device == "cpu" && stage == 3) {
          set("offload_parameters", "true", key);
        } else if (device == "cpu") {
          fail(key, "parameter offload (offload_param) offloads ZeRO-3's parameter shards: it needs "
                    "\"zero_optimization.stage\": 3, as in DeepSpeed");
        } else if (device == "nvme") {
          fail(key, "offloading to NVMe (ZeRO-Infinity) is not available here");
        } else if (device != "none") {
          fail(key, "parameter offload to \"" + device + "\" is not available here (\"cpu\" or \"none\")");
        }
      } else if (name == "pin_memory" || name == "buffer_count" || name == "buffer_size" || name == "max_in_cpu") {
        continue;  // how DeepSpeed stages the offloaded parameters: the shards are in host memory here
      } else if (name == "nvme_path") {
        fail(key, "offloading to NVMe (ZeRO-Infinity) is not available here");
      } else {
        unknown(key);
      }
    }
  }

  DeepSpeedMapping& out_;
};

}  // namespace

DeepSpeedMapping read_deepspeed_config(const std::string& file_or_json) {
  DeepSpeedMapping out;
  std::string text;
  std::size_t first = file_or_json.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && file_or_json[first] == '{') {
    out.origin = "the --deepspeed JSON";
    text = file_or_json;
  } else {
    out.origin = "--deepspeed " + file_or_json;
    try {
      text = io::read_file(file_or_json);
    } catch (const io::IoError& e) {
      throw UsageError(out.origin + ": cannot be read: " + e.what());
    }
  }
  json::Value config;
  try {
    config = json::parse(text);
  } catch (const json::ParseError& e) {
    throw UsageError(out.origin + ": not valid JSON " + e.what());
  }
  Walker(out).root(config);
  return out;
}

}  // namespace llmrdzv::train
