// --deepspeed: the DeepSpeed configs of the workflows this trainer replaces (tests/trainer/train/
// deepspeed/: HF's documented ZeRO-2 and ZeRO-3 CPU-offload configs, written from their text, and
// an explicit one) mapped onto the options with HF Trainer's rules ("auto" keeps the option, an
// explicit value sets it and must agree with a given option); everything else refused by name.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "llmrdzv/train/cli.hpp"

using llmrdzv::train::Command;
using llmrdzv::train::DeepSpeedScheduler;
using llmrdzv::train::Offload;
using llmrdzv::train::parse_command_line;
using llmrdzv::train::UsageError;

namespace {

const std::string kSeeds = std::string(LLMRDZV_SOURCE_DIR) + "/tests/trainer/train/deepspeed/";

Command parse(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--do_train", "--train_file", "corpus.txt", "--output_dir", "out"};
  args.insert(args.end(), extra.begin(), extra.end());
  return parse_command_line(args);
}

// The error a --deepspeed JSON given inline gets.
std::string refusal(const std::string& json, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {"--deepspeed", json});
  try {
    parse(extra);
  } catch (const UsageError& e) {
    return e.what();
  }
  FAIL("accepted: " << json);
  return "";
}

bool has_note(const Command& c, const std::string& text) {
  for (const std::string& note : c.train.deepspeed_notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("HF's ZeRO-2 offload config with auto values keeps the options and offloads the optimizer", "[cli][deepspeed]") {
  const Command c = parse({"--deepspeed", kSeeds + "zero2-offload.json", "--per_device_train_batch_size", "4",
                           "--learning_rate", "3e-5", "--warmup_steps", "10"});
  CHECK(c.train.offload == Offload::optimizer);
  CHECK(c.train.per_device_train_batch_size == 4);  // "auto": the option's value
  CHECK(c.train.learning_rate == 3e-5);
  CHECK(c.train.warmup_steps == 10);
  CHECK_FALSE(c.train.fp16);  // "enabled": "auto" follows --fp16
  CHECK(c.train.deepspeed_schedule.type == DeepSpeedScheduler::warmup_lr);
  CHECK(c.train.deepspeed_schedule.log_warmup);  // DeepSpeed's default warmup_type
  CHECK(c.train.deepspeed_schedule.warmup_min_lr == 0);
  // DeepSpeed's loss-scaler settings, for when --fp16 is on.
  CHECK(c.train.loss_scaling.growth_interval == 1000);
  CHECK(c.train.loss_scaling.hysteresis == 2);
  CHECK(c.train.loss_scaling.initial_scale == 65536.0);
  CHECK(has_note(c, "zero_optimization.overlap_comm: no effect here"));
  CHECK(has_note(c, "zero_optimization.offload_optimizer.pin_memory: no effect here"));
  CHECK(has_note(c, "steps_per_print: no effect here"));
  CHECK(has_note(c, "--offload optimizer"));
}

TEST_CASE("explicit values set the options and the checks HF's Trainer makes later", "[cli][deepspeed]") {
  const Command c = parse({"--deepspeed", kSeeds + "explicit-zero2.json"});
  CHECK(c.train.per_device_train_batch_size == 4);
  CHECK(c.train.gradient_accumulation_steps == 2);
  CHECK(c.train.max_grad_norm == 0.5);
  CHECK(c.train.learning_rate == 3e-4);
  CHECK(c.train.adam_beta1 == 0.9);
  CHECK(c.train.adam_beta2 == 0.95);
  CHECK(c.train.adam_epsilon == 1e-8);
  CHECK(c.train.weight_decay == 0.1);
  CHECK(c.train.warmup_steps == 3);
  CHECK(c.train.bf16 == false);
  CHECK(c.train.offload == Offload::optimizer);
  CHECK(c.train.deepspeed_schedule.type == DeepSpeedScheduler::warmup_decay_lr);
  CHECK_FALSE(c.train.deepspeed_schedule.log_warmup);
  REQUIRE(c.train.deepspeed_checks.train_batch_size);
  CHECK(*c.train.deepspeed_checks.train_batch_size == 16);
  REQUIRE(c.train.deepspeed_checks.total_num_steps);
  CHECK(*c.train.deepspeed_checks.total_num_steps == 12);
}

TEST_CASE("an explicit value that disagrees with a given option is an error naming both", "[cli][deepspeed]") {
  CHECK_THROWS_WITH(parse({"--deepspeed", kSeeds + "explicit-zero2.json", "--per_device_train_batch_size", "8"}),
                    Catch::Contains("\"train_micro_batch_size_per_gpu\": 4 disagrees with --per_device_train_batch_size 8"));
  CHECK_THROWS_WITH(parse({"--learning_rate", "1e-3", "--deepspeed", kSeeds + "explicit-zero2.json"}),
                    Catch::Contains("\"optimizer.params.lr\": 3e-04 disagrees with --learning_rate 0.001"));
  // Agreeing is fine, and so is the option's own spelling of the same number.
  CHECK(parse({"--deepspeed", kSeeds + "explicit-zero2.json", "--learning_rate", "0.0003", "--offload", "optimizer"})
            .train.learning_rate == 3e-4);
  // Within the config: two keys setting one option must agree.
  CHECK_THAT(refusal(R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
                         "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 2e-4}}})"),
             Catch::Contains("\"scheduler.params.warmup_max_lr\": 2e-04 disagrees with \"optimizer.params.lr\": 1e-04"));
}

TEST_CASE("ZeRO-3 is --shard_parameters with offload_param cpu as --offload_parameters, and offload_param without stage 3 or to NVMe is refused by name",
          "[cli][deepspeed]") {
  CHECK(parse({"--deepspeed", R"({"zero_optimization": {"stage": 3}})"}).train.shard_parameters);
  CHECK_FALSE(parse({"--deepspeed", R"({"zero_optimization": {"stage": 3}})"}).train.offload_parameters);
  CHECK_FALSE(parse({"--deepspeed", R"({"zero_optimization": {"stage": 2}})"}).train.shard_parameters);
  const Command seeds = parse({"--deepspeed", kSeeds + "zero3-offload.json"});
  CHECK(seeds.train.shard_parameters);
  CHECK(seeds.train.offload_parameters);
  CHECK(seeds.train.offload == Offload::optimizer);
  CHECK(has_note(seeds, "zero_optimization.stage3_gather_16bit_weights_on_model_save: always on here"));
  CHECK(has_note(seeds, "zero_optimization.stage3_max_live_parameters: no effect here"));
  CHECK_THAT(refusal(R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})"),
             Catch::Contains("\"zero_optimization.offload_param.device\": parameter offload") &&
                 Catch::Contains("needs \"zero_optimization.stage\": 3"));
  CHECK_THAT(refusal(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})"),
             Catch::Contains("\"zero_optimization.offload_param.device\": offloading to NVMe"));
  CHECK_THAT(refusal(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "gpu"}}})"),
             Catch::Contains("parameter offload to \"gpu\" is not available here"));
  CHECK_THAT(refusal(R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})"),
             Catch::Contains("NVMe"));
  // The option itself only with the sharding it offloads.
  CHECK_THROWS_WITH(parse({"--offload_parameters", "true"}), Catch::Contains("give both"));
  CHECK(parse({"--offload_parameters", "true", "--shard_parameters", "true"}).train.offload_parameters);
}

TEST_CASE("other optimizers, schedulers and unknown keys are refused, never ignored", "[cli][deepspeed]") {
  CHECK_THAT(refusal(R"({"optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}})"),
             Catch::Contains("\"optimizer.type\": 'Lamb' is not available"));
  CHECK_THAT(refusal(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})"),
             Catch::Contains("L2 regularisation"));
  CHECK_THAT(refusal(R"({"scheduler": {"type": "OneCycle", "params": {}}})"),
             Catch::Contains("\"scheduler.type\": 'OneCycle' is not available"));
  CHECK_THAT(refusal(R"({"zero_optimization": {"stage": 2, "offlod_optimizer": {"device": "cpu"}}})"),
             Catch::Contains("\"zero_optimization.offlod_optimizer\": is not a DeepSpeed setting this trainer knows"));
  CHECK_THAT(refusal(R"({"trian_batch_size": 8})"), Catch::Contains("\"trian_batch_size\""));
  CHECK_THAT(refusal(R"({"amp": {"enabled": true}})"), Catch::Contains("Apex"));
  CHECK_THAT(refusal(R"({"fp16": {"enabled": true, "loss_scale": 128}})"), Catch::Contains("static loss scale"));
  CHECK_THAT(refusal(R"({"scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 10}}})"),
             Catch::Contains("not a parameter of WarmupLR"));
}

TEST_CASE("damaged DeepSpeed configs get one line naming the file or key", "[cli][deepspeed]") {
  CHECK_THAT(refusal("{\"train_micro_batch_size_per_gpu\": \"four\"}"),
             Catch::Contains("\"train_micro_batch_size_per_gpu\": expects an integer or \"auto\", got \"four\""));
  CHECK_THAT(refusal("{\"gradient_accumulation_steps\": 0}"), Catch::Contains("must be at least 1"));
  CHECK_THAT(refusal("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"betas\": [0.9]}}}"),
             Catch::Contains("expects [beta1, beta2]"));
  CHECK_THAT(refusal("{\"train_batch_size\": 8,}"), Catch::Contains("the --deepspeed JSON: not valid JSON"));
  CHECK_THAT(refusal("[1, 2]"), Catch::Contains("cannot be read"));  // not a '{': taken as a file name
  CHECK_THAT(refusal("{\"zero_optimization\": 2}"), Catch::Contains("\"zero_optimization\": expects an object"));
  CHECK_THROWS_WITH(parse({"--deepspeed", kSeeds + "no-such.json"}),
                    Catch::Contains("--deepspeed " + kSeeds + "no-such.json: cannot be read"));
}

TEST_CASE("stage 0-2 without offload are plain data parallel, said in the log", "[cli][deepspeed]") {
  const Command c = parse({"--deepspeed", R"({"zero_optimization": {"stage": 1}, "train_micro_batch_size_per_gpu": 2})"});
  CHECK(c.train.offload == Offload::none);
  CHECK(c.train.per_device_train_batch_size == 2);
  CHECK(has_note(c, "stage 1 without offload_optimizer"));
  CHECK(has_note(c, "the --deepspeed JSON: --per_device_train_batch_size 2"));
}
