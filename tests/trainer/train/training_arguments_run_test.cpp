// The TrainingArguments and DeepSpeed command lines of the workflows this trainer replaces, run
// through the real trainer on a tiny model: --eval_strategy steps and epoch, --save_strategy best
// with --load_best_model_at_end (the exported model is the best checkpoint's, and a resumed run
// ends with the same one), and the DeepSpeed configs of tests/trainer/train/deepspeed/ driving
// the run (offload, DeepSpeed's learning-rate curves, train_batch_size checked against the ranks).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/safetensors.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"
#include "trainer_process.hpp"

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_ok;
using trainer_test::metric_series;
using trainer_test::run_trainer;
using trainer_test::RunResult;
namespace fs = std::filesystem;
namespace json = llmrdzv::json;

namespace {

const std::string kSeeds = std::string(LLMRDZV_SOURCE_DIR) + "/tests/trainer/train/deepspeed/";

// Training text a tiny model memorises quickly, and validation text it never sees: the
// validation loss falls while the model learns the bytes both share, then rises as it overfits.
std::string training_text() {
  return trainer_test::word_corpus({"alpha", "beta", "gamma", "delta", "kappa"}, 3, 120, 6);
}
std::string validation_text() {
  return trainer_test::word_corpus({"yield", "lambda", "frozen", "tuple", "await", "module", "bytes"}, 8, 240, 9);
}

std::vector<std::string> base_args(const ScratchDir& dir, const std::string& out) {
  return {"--do_train", "--train_file", dir.file("train.txt"), "--validation_file", dir.file("valid.txt"),
          "--output_dir", out, "--token_cache_dir", dir.file("cache"),
          "--config_overrides", "n_layer=2,n_head=2,n_embd=32,n_positions=32,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
          "--block_size", "16", "--per_device_train_batch_size", "4", "--max_eval_samples", "8", "--threads", "1",
          "--logging_steps", "1", "--seed", "3"};
}

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

// step -> eval_loss of every evaluation record in metrics.jsonl.
std::map<std::int64_t, double> evaluations(const std::string& metrics_path) {
  std::map<std::int64_t, double> out;
  const std::string text = read_file(metrics_path);
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t end = text.find('\n', begin);
    const json::Value record = json::parse(text.substr(begin, end - begin));
    if (const json::Value* loss = record.find("eval_loss"); loss && record.find("step")) {
      out[record.find("step")->as_integer()] = loss->as_double();
    }
    begin = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

std::vector<std::int64_t> checkpoint_steps(const std::string& out) {
  std::vector<std::int64_t> steps;
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("checkpoint-")) steps.push_back(std::stoll(name.substr(11)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// name -> raw bytes of every tensor in a safetensors file.
std::map<std::string, std::vector<std::byte>> tensors_of(const std::string& path) {
  const auto file = llmrdzv::io::SafetensorsFile::open(path, llmrdzv::io::SafetensorsFile::Mode::read);
  std::map<std::string, std::vector<std::byte>> out;
  for (const auto& info : file.tensors()) {
    const auto bytes = file.data(info);
    out[info.name].assign(bytes.begin(), bytes.end());
  }
  return out;
}

double result(const std::string& out, const char* key) {
  return json::parse(read_file(out + "/all_results.json")).find(key)->as_double();
}

}  // namespace

TEST_CASE("eval_strategy steps and epoch evaluate when transformers' Trainer does", "[train][training_arguments]") {
  ScratchDir dir("eval-strategy");
  dir.write("train.txt", training_text());
  dir.write("valid.txt", validation_text());
  // --evaluation_strategy (the old name) with no --eval_steps: every --logging_steps.
  const std::string steps = dir.file("steps");
  expect_ok(run_trainer(with(base_args(dir, steps), {"--evaluation_strategy", "steps", "--logging_steps", "3",
                                                    "--max_steps", "9", "--save_strategy", "no"})));
  std::vector<std::int64_t> at;
  for (const auto& [step, loss] : evaluations(steps + "/metrics.jsonl")) at.push_back(step);
  CHECK(at == std::vector<std::int64_t>{3, 6, 9});  // the last one is also the final --do_eval's
  CHECK(result(steps, "eval_loss") == evaluations(steps + "/metrics.jsonl").at(9));

  const std::string epochs = dir.file("epochs");
  const RunResult run = run_trainer(with(base_args(dir, epochs), {"--eval_strategy", "epoch", "--num_train_epochs", "2.5",
                                                                 "--save_strategy", "no"}));
  expect_ok(run);
  // 120 words of ~6 bytes make a few 16-token blocks: read the epoch length from the records.
  const auto epoch_of = metric_series(epochs + "/metrics.jsonl", "epoch");
  std::int64_t per_epoch = 0;
  while (per_epoch < static_cast<std::int64_t>(epoch_of.size()) && epoch_of[per_epoch] < 1.0 - 1e-9) ++per_epoch;
  ++per_epoch;
  REQUIRE(per_epoch >= 2);
  at.clear();
  for (const auto& [step, loss] : evaluations(epochs + "/metrics.jsonl")) at.push_back(step);
  const auto total = static_cast<std::int64_t>(epoch_of.size());
  CHECK(at == std::vector<std::int64_t>{per_epoch, 2 * per_epoch, total});  // each epoch's end, then the final one
}

TEST_CASE("save_strategy best with --load_best_model_at_end exports the best checkpoint's model, also after a resume",
          "[train][training_arguments][resume]") {
  ScratchDir dir("best-model");
  dir.write("train.txt", training_text());
  dir.write("valid.txt", validation_text());
  const auto args = [&](const std::string& out) {
    return with(base_args(dir, out), {"--learning_rate", "2e-2", "--lr_scheduler_type", "constant", "--max_steps", "40",
                                      "--eval_strategy", "steps", "--eval_steps", "4", "--save_strategy", "best",
                                      "--metric_for_best_model", "eval_loss", "--load_best_model_at_end"});
  };
  const std::string out = dir.file("run");
  const RunResult run = run_trainer(args(out));
  expect_ok(run);
  const auto evals = evaluations(out + "/metrics.jsonl");
  // The validation loss falls, then rises as the model overfits its training text.
  const auto best = std::min_element(evals.begin(), evals.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  REQUIRE(best->first < 40);
  // A checkpoint at each new best, none otherwise.
  std::vector<std::int64_t> new_bests;
  double lowest = INFINITY;
  for (const auto& [step, loss] : evals) {
    if (loss < lowest) lowest = loss, new_bests.push_back(step);
  }
  CHECK(checkpoint_steps(out) == new_bests);
  CHECK_THAT(run.out, Catch::Contains("best model: checkpoint-" + std::to_string(best->first)));
  // The exported model is the best checkpoint's, and the final evaluation is of it.
  CHECK(tensors_of(out + "/model.safetensors") ==
        tensors_of(out + "/checkpoint-" + std::to_string(best->first) + "/model.safetensors"));
  CHECK(result(out, "eval_loss") == Approx(best->second).epsilon(1e-12));

  // Resumed from the first best: the same bests, checkpoints and exported model.
  const std::string resumed = dir.file("resumed");
  fs::create_directories(resumed);
  fs::copy(out + "/checkpoint-" + std::to_string(new_bests.front()), resumed + "/checkpoint-" + std::to_string(new_bests.front()),
           fs::copy_options::recursive);
  expect_ok(run_trainer(with(args(resumed), {"--resume_from_checkpoint", "latest"})));
  CHECK(checkpoint_steps(resumed) == new_bests);
  CHECK(read_file(resumed + "/model.safetensors") == read_file(out + "/model.safetensors"));
}

TEST_CASE("save_total_limit 1 keeps the best checkpoint beside the newest, then only the best", "[train][training_arguments]") {
  ScratchDir dir("best-limit");
  dir.write("train.txt", training_text());
  dir.write("valid.txt", validation_text());
  const std::string out = dir.file("run");
  expect_ok(run_trainer(with(base_args(dir, out), {"--learning_rate", "2e-2", "--lr_scheduler_type", "constant",
                                                  "--max_steps", "40", "--eval_strategy", "steps", "--eval_steps", "4",
                                                  "--save_steps", "4", "--save_total_limit", "1", "--load_best_model_at_end"})));
  const auto evals = evaluations(out + "/metrics.jsonl");
  const auto best = std::min_element(evals.begin(), evals.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  REQUIRE(best->first < 40);
  CHECK(checkpoint_steps(out) == std::vector<std::int64_t>{best->first});
  CHECK(tensors_of(out + "/model.safetensors") ==
        tensors_of(out + "/checkpoint-" + std::to_string(best->first) + "/model.safetensors"));
}

TEST_CASE("HF's ZeRO-2 offload DeepSpeed config runs: optimizer offloaded, DeepSpeed's log warmup", "[train][deepspeed]") {
  ScratchDir dir("deepspeed-zero2");
  dir.write("train.txt", training_text());
  dir.write("valid.txt", validation_text());
  const std::string out = dir.file("run");
  const RunResult run = run_trainer(with(base_args(dir, out), {"--deepspeed", kSeeds + "zero2-offload.json", "--learning_rate",
                                                              "1e-3", "--warmup_steps", "5", "--max_steps", "8"}));
  expect_ok(run);
  CHECK_THAT(run.out, Catch::Contains("zero2-offload.json: --offload optimizer"));
  CHECK_THAT(run.out, Catch::Contains("learning rate follows DeepSpeed's WarmupLR (log warmup)"));
  CHECK_THAT(run.out, Catch::Contains("zero_optimization.overlap_comm: no effect here"));
  // Step k's update used the rate of DeepSpeed's iteration k - 1: log(k) / log(5) of the peak.
  const auto lr = metric_series(out + "/metrics.jsonl", "learning_rate");
  REQUIRE(lr.size() == 8);
  for (std::size_t k = 1; k <= lr.size(); ++k) {
    const double expected = k <= 5 ? 1e-3 * std::log(static_cast<double>(k)) / std::log(5.0) : 1e-3;
    CHECK(lr[k - 1] == Approx(expected).margin(1e-15));
  }
}

TEST_CASE("an explicit DeepSpeed config sets the batch, the schedule and checks train_batch_size against the ranks",
          "[train][deepspeed][distributed]") {
  ScratchDir dir("deepspeed-explicit");
  dir.write("train.txt", training_text());
  dir.write("valid.txt", validation_text());
  // train_batch_size 16 = 2 ranks x 4 x 2 micro-batches; total_num_steps 12.
  const std::string out = dir.file("run");
  expect_ok(run_trainer(with(base_args(dir, out), {"--deepspeed", kSeeds + "explicit-zero2.json", "--nproc", "2",
                                                  "--max_steps", "12"})));
  // WarmupDecayLR with linear warmup over 3 steps to 3e-4, then down to 0 at step 12, as
  // DeepSpeed 0.19.8 computes it for iterations 0..11 (schedule_progress_test.cpp).
  const std::vector<double> deepspeed = {0.0, 9.999999999999999e-05, 0.00019999999999999998, 0.0003, 0.0002666666666666666,
                                         0.0002333333333333333, 0.00019999999999999998, 0.00016666666666666666,
                                         0.0001333333333333333, 9.999999999999999e-05, 6.666666666666666e-05, 3.333333333333333e-05};
  const auto lr = metric_series(out + "/metrics.jsonl", "learning_rate");
  REQUIRE(lr.size() == deepspeed.size());
  for (std::size_t i = 0; i < lr.size(); ++i) CHECK(lr[i] == Approx(deepspeed[i]).margin(1e-15));

  const RunResult one_rank = run_trainer(with(base_args(dir, dir.file("one")), {"--deepspeed", kSeeds + "explicit-zero2.json",
                                                                                 "--max_steps", "12"}));
  CHECK(one_rank.exit_code == 1);
  CHECK_THAT(one_rank.err, Catch::Contains("\"train_batch_size\": 16 disagrees with the run's 1 ranks x 4 sequences x 2 "
                                           "micro-batches = 8"));
  const RunResult short_run = run_trainer(with(base_args(dir, dir.file("short")), {"--deepspeed", kSeeds + "explicit-zero2.json",
                                                                                    "--nproc", "2", "--max_steps", "10"}));
  CHECK(short_run.exit_code == 1);
  CHECK_THAT(short_run.err, Catch::Contains("\"scheduler.params.total_num_steps\": 12 disagrees with the run's 10 optimizer steps"));
}

TEST_CASE("model_type makes a fresh model of the family's config defaults, and must match a given model", "[train][training_arguments]") {
  ScratchDir dir("model-type");
  dir.write("train.txt", training_text());
  dir.write("valid.txt", validation_text());
  const std::string out = dir.file("opt");
  std::vector<std::string> args = base_args(dir, out);
  const auto overrides = std::find(args.begin(), args.end(), "--config_overrides");
  *(overrides + 1) = "num_hidden_layers=2,hidden_size=32,num_attention_heads=2,ffn_dim=48,word_embed_proj_dim=32,"
                     "max_position_embeddings=32";
  expect_ok(run_trainer(with(args, {"--model_type", "opt", "--max_steps", "2"})));
  const json::Value config = json::parse(read_file(out + "/config.json"));
  CHECK(config.find("model_type")->as_string() == "opt");
  CHECK(config.find("do_layer_norm_before")->as_bool());  // OPTConfig()'s default, not a preset's
  const RunResult mismatch = run_trainer(with(base_args(dir, dir.file("again")), {"--model_name_or_path", out,
                                                                                 "--config_overrides", "", "--model_type", "llama",
                                                                                 "--max_steps", "1"}));
  CHECK(mismatch.exit_code == 1);
  CHECK_THAT(mismatch.err, Catch::Contains("--model_type llama disagrees with the model_type \"opt\" of the model in '" + out + "'"));
}

TEST_CASE("evaluations report bits per byte of the predicted text beside the loss per token", "[train][bits_per_byte]") {
  ScratchDir dir("bits-per-byte");
  dir.write("train.txt", training_text());
  // 63 bytes and the document's EOS: four 16-token blocks predicting 60 tokens, the last of them
  // the EOS, which stands for no text.
  dir.write("valid.txt", std::string(validation_text(), 0, 63));
  const std::string out = dir.file("run");
  expect_ok(run_trainer(with(base_args(dir, out), {"--do_eval", "--max_steps", "3", "--eval_strategy", "steps",
                                                  "--eval_steps", "2"})));
  const json::Value results = json::parse(read_file(out + "/all_results.json"));
  const double loss = results.find("eval_loss")->as_double();
  CHECK(results.find("eval_bits_per_byte")->as_double() == Approx(loss * 60 / (59 * std::log(2.0))).epsilon(1e-12));
  // In every evaluation record too.
  const std::string text = read_file(out + "/metrics.jsonl");
  for (std::size_t at = text.find("\"eval_loss\""); at != std::string::npos; at = text.find("\"eval_loss\"", at + 1)) {
    const std::size_t line_end = text.find('\n', at);
    CHECK(text.substr(at, line_end - at).find("bits_per_byte\"") != std::string::npos);  // eval_bits_per_byte in the results
  }
}

TEST_CASE("with keep_linebreaks false a text file's lines are its documents, their breaks dropped", "[train][keep_linebreaks]") {
  ScratchDir dir("keep-linebreaks");
  dir.write("train.txt", training_text());
  // Seven lines of 8 bytes: whole, 63 bytes and the document's EOS (4 blocks of 16, as above);
  // a line a document, 7 x (8 bytes + EOS) = 63 tokens: 3 blocks whose 45 predicted tokens hold
  // 5 EOS (positions 8, 17, 26, 35, 44), so 40 bytes of text.
  dir.write("valid.txt", "module_a\nmodule_b\r\nmodule_c\rmodule_d\nmodule_e\nmodule_f\nmodule_g\n");
  const std::string out = dir.file("run");
  const RunResult run = run_trainer(with(base_args(dir, out), {"--do_eval", "--max_steps", "2", "--keep_linebreaks", "False"}));
  expect_ok(run);
  CHECK_THAT(run.err, Catch::Contains("valid.txt: --keep_linebreaks false: 1 text file(s) read a document per line"));
  const json::Value results = json::parse(read_file(out + "/all_results.json"));
  const double loss = results.find("eval_loss")->as_double();
  CHECK(results.find("eval_bits_per_byte")->as_double() == Approx(loss * 45 / (40 * std::log(2.0))).epsilon(1e-12));
}
