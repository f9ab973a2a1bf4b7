// --shard_parameters (ZeRO-3) through the real trainer on Gloo ranks: every family gives the losses
// of one plain rank on the same global batch at 2, 3 (uneven shards, activation checkpointing) and
// 4 ranks (an untied head), bf16 follows as plain data parallelism does, each rank's parameter and
// gradient storages stay within its shards plus the units in flight (evaluations, checkpoints and
// the export read the model unit by unit), a resumed run repeats the uninterrupted one bit for
// bit, a resume at another world size reshards the optimizer state and continues the same run,
// the saved model is the unsharded run's and --load_best_model_at_end's the best checkpoint's, a
// saved model is fine-tuned read unit by unit from its shard files, and transformers' documented ZeRO-3 CPU-offload DeepSpeed config runs as it is. The schedule's
// proof on the CPU: one GPU cannot show ZeRO-3.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "family_runs.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/json.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"
#include "trainer_process.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_ok;
using trainer_test::metric_series;
using trainer_test::run_trainer;
using trainer_test::RunResult;
using namespace trainer_test::families;

namespace {

// Global batch 12 per micro-batch: 1 x 12, 2 x 6, 3 x 4, 4 x 3.
constexpr int kGlobalBatch = 12;

// What a rank reported of the bytes it held (ShardedStep::residency_report).
struct Residency {
  std::int64_t shards, optimizer, peak_parameters, peak_gradients, whole_model, largest_unit, outer_unit;
};

std::vector<Residency> residencies(const RunResult& run, int ranks) {
  static const std::regex line(
      R"(rank (\d+): --shard_parameters over (\d+) ranks: (\d+) bytes of parameter and gradient shards and (\d+) bytes of optimizer state held; at most (\d+) bytes of whole-unit parameters and (\d+) bytes of whole-unit gradients alive at once during training \(the whole model: (\d+) bytes; its largest unit (\d+), unit 0 (\d+)\))");
  std::vector<Residency> found(static_cast<std::size_t>(ranks), Residency{-1, -1, -1, -1, -1, -1, -1});
  const std::string text = run.out + run.err;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const int rank = std::stoi(m[1]);
    REQUIRE(std::stoi(m[2]) == ranks);
    REQUIRE(rank < ranks);
    found[static_cast<std::size_t>(rank)] = {std::stoll(m[3]), std::stoll(m[4]), std::stoll(m[5]), std::stoll(m[6]),
                                             std::stoll(m[7]), std::stoll(m[8]), std::stoll(m[9])};
  }
  for (const auto& r : found) REQUIRE(r.shards >= 0);  // every rank reported
  return found;
}

// The memory bound of ZeRO-3, from the storages each rank held: its shards are 1/N of the model's
// parameters and their fp32 gradients (plus each unit's padding to a multiple of N), at most unit 0
// and two blocks (the one computing, the next one prefetched) were gathered at once, and the fp32
// buffers gradients land in existed for at most unit 0 (it waits for the embeddings') and two
// blocks (one filling, the one before it being reduced). AdamW's two fp32 moments are 1/N of the model's, and with bf16 parameters the fp32
// masters too. Per byte of the parameters' type (fp32, or bf16 with `bf16`): shards and their fp32
// gradients 2 (3 in bf16), optimizer state 2 (6), whole-unit gradients as unit 0 and two blocks 1 (2).
void check_bounds(const std::vector<Residency>& ranks, int world, int units, bool bf16 = false) {
  const std::int64_t shard_factor = bf16 ? 3 : 2, optimizer_factor = bf16 ? 6 : 2;
  for (const auto& r : ranks) {
    INFO("shards " << r.shards << ", optimizer " << r.optimizer << ", peak parameters " << r.peak_parameters
                   << ", peak gradients " << r.peak_gradients << ", model " << r.whole_model << ", largest unit "
                   << r.largest_unit << ", unit 0 " << r.outer_unit);
    const std::int64_t padding = static_cast<std::int64_t>(units) * 4 * world;
    CHECK(r.shards <= shard_factor * (r.whole_model / world + padding));
    CHECK(std::abs(r.optimizer - optimizer_factor * r.whole_model / world) <= optimizer_factor * padding);
    CHECK(r.peak_parameters > 0);
    CHECK(r.peak_parameters <= r.outer_unit + 2 * r.largest_unit + padding);
    if (units > 3) CHECK(r.peak_parameters < r.whole_model);  // more than unit 0 and two blocks: never all of it
    CHECK(r.peak_gradients > 0);
    CHECK(r.peak_gradients <= (bf16 ? 2 : 1) * (r.outer_unit + 2 * r.largest_unit + padding));
  }
}

// The losses of a --shard_parameters run of `family` on `ranks` ranks (the global batch of
// kGlobalBatch), with `extra` arguments; `held` receives what each rank reported holding.
std::vector<double> sharded_losses(const ScratchDir& dir, const Family& family, const std::string& out, int ranks,
                                   const std::vector<std::string>& extra = {}, std::vector<Residency>* held = nullptr,
                                   const std::string& extra_overrides = "") {
  std::vector<std::string> args = with(
      run_args(dir, family, dir.file(out), without_dropout(family) + extra_overrides, kGlobalBatch / ranks),
      {"--nproc", std::to_string(ranks), "--shard_parameters", "true"});
  args.insert(args.end(), extra.begin(), extra.end());
  const RunResult run = run_trainer(args);
  expect_ok(run);
  if (held) *held = residencies(run, ranks);
  const auto losses = metric_series(dir.file(out + "/metrics.jsonl"), "loss");
  REQUIRE(losses.size() == 12);
  return losses;
}

void expect_same_losses(const std::vector<double>& got, const std::vector<double>& reference, double relative,
                        const std::string& what) {
  REQUIRE(got.size() == reference.size());
  for (std::size_t step = 0; step < got.size(); ++step) {
    INFO(what << " step " << step + 1 << ": " << got[step] << " vs 1 rank " << reference[step]);
    CHECK(std::abs(got[step] - reference[step]) <= relative * std::abs(reference[step]));
  }
}

// The HF state dict of the model a run saved into `dir`.
llmrdzv::io::NamedTensors saved_weights(const std::string& dir) {
  return llmrdzv::io::to_hf_state_dict(llmrdzv::io::load_hf_model(dir));
}

// The model's units: its blocks and unit 0.
int units_of(const Family& family) {
  std::smatch m;
  const std::string& overrides = family.overrides;
  REQUIRE(std::regex_search(overrides, m, std::regex(R"((?:num_hidden_layers|n_layer)=(\d+))")));
  return std::stoi(m[1]) + 1;
}

}  // namespace

TEST_CASE("ZeRO-3 (--shard_parameters): GPT-2, OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 at 2 and 3 ranks give the 1-rank losses, each rank holding its shards and the units in flight",
          "[train][families][sharded]") {
  for (const Family& family : {kGpt2, kOpt, kLlama, kMistral, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3}) {
    DYNAMIC_SECTION(family.name) {
      ScratchDir dir("sharded-families");
      dir.write("corpus.txt", corpus());
      const auto reference = reference_losses(dir, family, "one", {}, kGlobalBatch);
      CHECK(reference.back() < reference.front() - 0.2);  // it learns

      std::vector<Residency> held;
      expect_same_losses(sharded_losses(dir, family, "two", 2, {}, &held), reference, 1e-5, "2 ranks");
      check_bounds(held, 2, units_of(family));
      // 3 ranks: shards of unequal content (the last padded), blocks recomputed in backward, which
      // gathers each block once more.
      expect_same_losses(sharded_losses(dir, family, "three", 3, {"--gradient_checkpointing", "true"}, &held), reference,
                         1e-5, "3 ranks, checkpointing");
      check_bounds(held, 3, units_of(family));
    }
  }
}

TEST_CASE("ZeRO-3 (--shard_parameters) at 4 ranks with an untied head, fine-tuning that model read unit by unit, and in bf16 as plain data parallelism follows fp32",
          "[train][sharded]") {
  ScratchDir dir("sharded-four");
  dir.write("corpus.txt", corpus());
  const std::string untied = ",tie_word_embeddings=false";
  // Saved in shards of at most 20 KB, with model.safetensors.index.json: fine-tuned below.
  const auto reference = [&] {
    expect_ok(run_trainer(with(run_args(dir, kLlama, dir.file("one"), untied, kGlobalBatch),
                               {"--save_safetensors_max_shard_size", "20KB"})));
    return metric_series(dir.file("one/metrics.jsonl"), "loss");
  }();
  REQUIRE(std::filesystem::exists(dir.file("one/model.safetensors.index.json")));
  std::vector<Residency> held;
  expect_same_losses(sharded_losses(dir, kLlama, "four", 4, {}, &held, untied), reference, 1e-5, "4 ranks, untied");
  check_bounds(held, 4, units_of(kLlama));
  bool head = false;
  for (const auto& [name, tensor] : saved_weights(dir.file("four"))) head = head || name == "lm_head.weight";
  CHECK(head);

  // Fine-tuning that model: each ZeRO-3 rank builds it without values and reads it from the
  // shard files a unit at a time (no rank holds it whole, within the same bounds), and the run is
  // one plain rank's fine-tuning: the same first loss (the weights read are the saved ones) and
  // the same curve.
  const auto fine_tune = [&](const std::string& out, int ranks, std::vector<std::string> extra) {
    std::vector<std::string> args{"--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0",
                                  "--output_dir", dir.file(out), "--token_cache_dir", dir.file("cache"),
                                  "--model_name_or_path", dir.file("one"), "--block_size", "16",
                                  "--per_device_train_batch_size", std::to_string(kGlobalBatch / ranks),
                                  "--gradient_accumulation_steps", "2", "--learning_rate", "1e-3", "--max_steps", "12",
                                  "--logging_steps", "1", "--save_steps", "12", "--threads", "1", "--seed", "5"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult run = run_trainer(args);
    expect_ok(run);
    if (ranks > 1) held = residencies(run, ranks);
    const auto losses = metric_series(dir.file(out + "/metrics.jsonl"), "loss");
    REQUIRE(losses.size() == 12);
    return losses;
  };
  const auto plain_tuned = fine_tune("tuned-one", 1, {});
  CHECK(plain_tuned.front() < reference.front() - 0.2);  // it starts from the trained model, not from scratch
  const auto sharded_tuned = fine_tune("tuned-three", 3, {"--nproc", "3", "--shard_parameters", "true"});
  expect_same_losses(sharded_tuned, plain_tuned, 1e-5, "fine-tuned at 3 ranks");
  check_bounds(held, 3, units_of(kLlama));

  // bf16 on the CPU: 2 sharded ranks against 2 plain data-parallel ones. The fp32 masters are
  // rounded to bf16 after every step, so a last-bit difference in the clip coefficient (the norm
  // summed over shards in double here, over whole tensors in fp32 there) can move a weight by a
  // bf16 unit: measured 2e-5 apart, as plain data parallelism is from one rank (4e-5).
  expect_ok(run_trainer(with(run_args(dir, kLlama, dir.file("plain-bf16"), "", kGlobalBatch / 2),
                             {"--nproc", "2", "--bf16", "true"})));
  const auto plain = metric_series(dir.file("plain-bf16/metrics.jsonl"), "loss");
  expect_same_losses(sharded_losses(dir, kLlama, "sharded-bf16", 2, {"--bf16", "true"}, &held), plain, 2e-4,
                     "bf16, 2 ranks");
  check_bounds(held, 2, units_of(kLlama), /*bf16=*/true);
}

TEST_CASE("ZeRO-3 (--shard_parameters): a resumed run repeats the uninterrupted one bit for bit, resumes at 2 and 4 ranks from 3 by resharding, and saves the 1-rank run's model",
          "[train][sharded][resume]") {
  ScratchDir dir("sharded-resume");
  dir.write("corpus.txt", corpus());
  // Evaluations at steps 6 and 12 and at the end: a sharded one gathers the model unit by unit.
  const std::string validation = dir.file("corpus.txt");
  const auto reference = reference_losses(
      dir, kGpt2, "one", {"--validation_file", validation, "--eval_strategy", "steps", "--eval_steps", "6"}, kGlobalBatch);
  const std::vector<std::string> evaluated{"--validation_file", validation, "--eval_strategy", "steps", "--eval_steps", "6"};
  std::vector<Residency> held;
  const auto whole = sharded_losses(dir, kGpt2, "whole", 3, evaluated, &held);
  expect_same_losses(whole, reference, 1e-5, "3 ranks");
  check_bounds(held, 3, units_of(kGpt2));
  const auto eval_loss = [&](const std::string& out) {
    return llmrdzv::json::parse(read_file(dir.file(out + "/eval_results.json"))).find("eval_loss")->as_double();
  };
  CHECK(std::abs(eval_loss("whole") - eval_loss("one")) <= 1e-5 * eval_loss("one"));

  // Resumed from step 6 into a copy of the run without its later checkpoint.
  std::filesystem::copy(dir.file("whole"), dir.file("resumed"), std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(dir.file("resumed/checkpoint-12"));
  const auto resumed = sharded_losses(dir, kGpt2, "resumed", 3,
                                     with(evaluated, {"--resume_from_checkpoint", dir.file("resumed/checkpoint-6")}));
  CHECK(resumed == whole);
  CHECK(read_file(dir.file("resumed/model.safetensors")) == read_file(dir.file("whole/model.safetensors")));

  // The export and the last checkpoint hold the same model bit for bit (both written unit by unit
  // from the shards), and it is the 1-rank run's to rounding.
  const auto sharded_model = saved_weights(dir.file("whole"));
  const auto checkpointed = saved_weights(dir.file("whole/checkpoint-12"));
  REQUIRE(sharded_model.size() == checkpointed.size());
  for (std::size_t i = 0; i < checkpointed.size(); ++i) {
    INFO(checkpointed[i].first);
    CHECK(sharded_model[i].first == checkpointed[i].first);
    CHECK(at::equal(sharded_model[i].second, checkpointed[i].second));
  }
  const auto plain_model = saved_weights(dir.file("one"));
  REQUIRE(sharded_model.size() == plain_model.size());
  for (std::size_t i = 0; i < plain_model.size(); ++i) {
    INFO(plain_model[i].first);
    CHECK(sharded_model[i].first == plain_model[i].first);
    CHECK((sharded_model[i].second - plain_model[i].second).abs().max().item<double>() <= 1e-5);
  }

  // --load_best_model_at_end with the worse evaluation ranked best: the step-6 checkpoint's weights
  // go into the whole model gathered on every rank, and the export is that model, bit for bit.
  sharded_losses(dir, kGpt2, "best", 3,
                 with(evaluated, {"--load_best_model_at_end", "true", "--metric_for_best_model", "loss",
                                  "--greater_is_better", "true"}));
  const auto best = saved_weights(dir.file("best"));
  const auto step6 = saved_weights(dir.file("best/checkpoint-6"));
  REQUIRE(best.size() == step6.size());
  bool any_differs_from_last = false;
  for (std::size_t i = 0; i < step6.size(); ++i) {
    INFO(step6[i].first);
    CHECK(at::equal(best[i].second, step6[i].second));
    any_differs_from_last = any_differs_from_last || !at::equal(best[i].second, sharded_model[i].second);
  }
  CHECK(any_differs_from_last);  // the step-12 model was not the one exported

  // The sharded optimizer state does not fit a run without --shard_parameters: refused by name.
  const RunResult unsharded = run_trainer(with(run_args(dir, kGpt2, dir.file("unsharded"), "", kGlobalBatch / 2),
                                               {"--nproc", "2", "--resume_from_checkpoint", dir.file("whole/checkpoint-6")}));
  CHECK(unsharded.exit_code != 0);
  CHECK_THAT(unsharded.out + unsharded.err,
             Catch::Contains("was saved with --shard_parameters (ZeRO-3): resume it with --shard_parameters true"));

  // Resumed at another world size (as an elastic restart does): the 3 ranks' optimizer shards cut
  // again for 2 and for 4 ranks, on the same global batch, continue the 1-rank run.
  for (const int ranks : {2, 4}) {
    const std::string name = "resharded-" + std::to_string(ranks);
    std::filesystem::copy(dir.file("whole"), dir.file(name), std::filesystem::copy_options::recursive);
    std::filesystem::remove_all(dir.file(name + "/checkpoint-12"));
    const auto resharded = sharded_losses(dir, kGpt2, name, ranks,
                                          with(evaluated, {"--resume_from_checkpoint", dir.file(name + "/checkpoint-6")}));
    expect_same_losses(resharded, reference, 1e-5, "3 ranks resumed at " + std::to_string(ranks));
  }
}

TEST_CASE("ZeRO-3 (--shard_parameters): transformers' documented ZeRO-3 CPU-offload DeepSpeed config runs as it is at 2 ranks and gives the losses of one plain rank on DeepSpeed's WarmupLR",
          "[train][sharded][deepspeed]") {
  ScratchDir dir("sharded-deepspeed");
  dir.write("corpus.txt", corpus());
  // The same optimizer and scheduler blocks without ZeRO: one plain rank, the global batch.
  const auto reference = reference_losses(
      dir, kLlama, "one",
      {"--deepspeed",
       R"({"optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
           "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto", "warmup_num_steps": "auto"}}})"},
      kGlobalBatch);
  const std::string seeds = std::string(LLMRDZV_SOURCE_DIR) + "/tests/trainer/train/deepspeed/zero3-offload.json";
  const RunResult run = run_trainer(with(run_args(dir, kLlama, dir.file("seeds"), "", kGlobalBatch / 2),
                                         {"--nproc", "2", "--deepspeed", seeds}));
  expect_ok(run);
  CHECK_THAT(run.out + run.err, Catch::Contains("--offload_parameters: on the CPU the parameter shards are in host memory already"));
  check_bounds(residencies(run, 2), 2, units_of(kLlama));  // the ranks held shards: ZeRO-3 ran
  const auto losses = metric_series(dir.file("seeds/metrics.jsonl"), "loss");
  REQUIRE(losses.size() == 12);
  expect_same_losses(losses, reference, 1e-5, "the ZeRO-3 config at 2 ranks");
}

TEST_CASE("ZeRO-3 (--shard_parameters): a model whose shards this node cannot hold is refused before any parameter is made, saying what it needs",
          "[train][sharded][memory]") {
  ScratchDir dir("sharded-too-big");
  dir.write("corpus.txt", corpus());
  // 80.5 billion parameters: 16 bytes each over 2 ranks, both on this node, is some 1.2 TiB.
  const RunResult run = run_trainer(with(run_args(dir, kGpt2, dir.file("out"), ",n_layer=100,n_embd=8192,n_head=64", 6),
                                         {"--nproc", "2", "--shard_parameters", "true"}));
  CHECK(run.exit_code != 0);
  const std::string text = run.out + run.err;
  CHECK_THAT(text, Catch::Contains("--shard_parameters: this model's 80.5 billion parameters need 12") &&
                       Catch::Contains("of host memory on this node (2 ranks x") &&
                       Catch::Contains("16 bytes per parameter over 2 ranks for the fp32 shards") &&
                       Catch::Contains("GiB available"));
}
