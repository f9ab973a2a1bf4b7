// The trainer end to end on tiny models and corpora: a model overfits, a resumed run repeats the
// uninterrupted run's losses and final weights exactly (metrics.jsonl and the TensorBoard curves,
// as TensorBoard reads them), every TensorBoard scalar equals its metrics.jsonl record, event files
// go to transformers' default directory, a damaged checkpoint is refused and `latest` falls back
// to the previous one, generate reproduces memorised text, and bad input fails with messages
// naming it.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "scratch_dir.hpp"
#include "run_checks.hpp"
#include "tensorboard_reader.hpp"
#include "trainer_process.hpp"

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_ok;
using trainer_test::run_trainer;
using trainer_test::RunResult;
namespace fs = std::filesystem;

namespace {

const std::string kTinyModel = "n_layer=2,n_head=2,n_embd=32,n_positions=32";

// 63 bytes + EOS = four 16-token blocks, each starting with a different byte.
const std::string kMemorise = "Abstract syntax trees. Bytecode runs. Coroutines yield. Dicts!!";

// Deterministic text of many distinct words, ~2.4 KB.
std::string word_salad() {
  return trainer_test::word_corpus({"list", "tuple", "dict", "set", "class", "module", "import", "yield", "lambda", "async",
                                    "await", "return", "frozen", "bytes", "str"},
                                   7, 400, 11);
}

// metrics.jsonl records by kind and step ("train" / "eval"); a later record for the same step
// (from a resumed run appending to the file) replaces the earlier one. The timings
// (tokens_per_second, step_time_s, comm_wait_s) are left out: they are not results.
std::map<std::pair<std::string, std::int64_t>, std::string> records(const std::string& path) {
  std::map<std::pair<std::string, std::int64_t>, std::string> by_step;
  std::string text = read_file(path);
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    const llmrdzv::json::Value record = llmrdzv::json::parse(text.substr(begin, end - begin));
    begin = end + 1;
    const auto* step = record.find("step");
    if (!step || record.find("global_step")) continue;
    llmrdzv::json::Object kept;
    for (const auto& [key, value] : record.as_object()) {
      if (key != "tokens_per_second" && key != "step_time_s" && key != "comm_wait_s") kept.emplace_back(key, value);
    }
    const std::string kind = record.find("eval_loss") ? "eval" : "train";
    by_step[{kind, step->as_integer()}] = llmrdzv::json::write(kept);
  }
  return by_step;
}

double last_train_loss(const std::string& metrics) {
  const auto all = records(metrics);
  double loss = -1;
  for (const auto& [key, line] : all) {
    if (key.first == "train") loss = llmrdzv::json::parse(line).find("loss")->as_double();
  }
  return loss;
}

using Curve = std::vector<std::pair<std::int64_t, std::optional<double>>>;

// metrics.jsonl as the TensorBoard curves the trainer writes with it: each record's values under
// their tag, at the record's step (null: not finite), timings included; a later record for the
// same step replaces the earlier one, as in records().
std::map<std::string, Curve> jsonl_curves(const std::string& path) {
  static const std::map<std::string, std::string> kTags{
      {"loss", "train/loss"}, {"learning_rate", "train/learning_rate"}, {"grad_norm", "train/grad_norm"},
      {"tokens_per_second", "train/tokens_per_second"}, {"step_time_s", "train/step_time"},
      {"comm_wait_s", "train/comm_wait"}, {"epoch", "train/epoch"}, {"eval_loss", "eval/loss"},
      {"perplexity", "eval/perplexity"}, {"bits_per_byte", "eval/bits_per_byte"}};
  std::map<std::string, std::map<std::int64_t, std::optional<double>>> by_tag;
  const std::string text = read_file(path);
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    const llmrdzv::json::Value record = llmrdzv::json::parse(text.substr(begin, end - begin));
    begin = end + 1;
    const auto* step = record.find("step");
    if (!step || record.find("global_step")) continue;
    for (const auto& [key, value] : record.as_object()) {
      if (const auto tag = kTags.find(key); tag != kTags.end())
        by_tag[tag->second][step->as_integer()] = value.is_null() ? std::nullopt : std::optional(value.as_double());
    }
  }
  std::map<std::string, Curve> curves;
  for (const auto& [tag, points] : by_tag) curves[tag].assign(points.begin(), points.end());
  return curves;
}

// A TensorBoard curve against the one metrics.jsonl gives: the same steps, and values equal
// within float32 rounding (event files hold scalars as float32, metrics.jsonl as doubles).
void check_curve(const Curve& seen, const Curve& expected) {
  REQUIRE(seen.size() == expected.size());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    INFO("point " << i << " at step " << expected[i].first);
    CHECK(seen[i].first == expected[i].first);
    REQUIRE(seen[i].second.has_value() == expected[i].second.has_value());
    if (seen[i].second)
      CHECK(*seen[i].second == Approx(*expected[i].second).epsilon(std::numeric_limits<float>::epsilon()));
  }
}

// The one TensorBoard run directory (<output_dir>/runs/<date>_<host>) of a trainer run.
fs::path tensorboard_dir(const std::string& output_dir) {
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(output_dir + "/runs")) runs.push_back(entry.path());
  REQUIRE(runs.size() == 1);
  return runs[0];
}

// The curves TensorBoard shows, without the timings (they are not results).
std::map<std::string, std::vector<std::pair<std::int64_t, std::optional<double>>>> result_curves(const fs::path& logdir) {
  auto scalars = trainer_test::read_with_tensorboard(logdir).scalars;
  for (const char* timing : {"train/tokens_per_second", "train/step_time", "train/comm_wait"}) {
    REQUIRE(scalars.contains(timing));
    scalars.erase(timing);
  }
  return scalars;
}

// A few steps of the tiny model on `train_file` into `out`: no validation split, blocks of 16,
// batches of 2, one thread. `extra` adds flags or overrides these: a later flag wins, as in
// transformers' argparse.
RunResult tiny_run(const std::string& train_file, const std::string& out, const std::vector<std::string>& extra,
                   trainer_test::Stdout stdout_to = trainer_test::Stdout::captured) {
  std::vector<std::string> args = {"--do_train", "--train_file", train_file, "--output_dir", out,
                                   "--validation_split_percentage", "0", "--config_overrides", kTinyModel,
                                   "--block_size", "16", "--per_device_train_batch_size", "2", "--threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_trainer(args, stdout_to);
}

std::vector<std::string> resume_run_args(const ScratchDir& dir, const std::string& output) {
  return {"--do_train", "--do_eval", "--train_file", dir.file("corpus.txt"), "--validation_file", dir.file("valid.txt"),
          "--output_dir", output, "--token_cache_dir", dir.file("cache"),
          "--config_overrides", kTinyModel + ",resid_pdrop=0.1,embd_pdrop=0.1,attn_pdrop=0.1",
          "--block_size", "16", "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
          "--learning_rate", "3e-3", "--weight_decay", "0.1", "--max_grad_norm", "0.5",
          "--lr_scheduler_type", "cosine", "--warmup_steps", "3", "--max_steps", "24",
          "--logging_steps", "1", "--eval_steps", "6", "--save_steps", "6", "--threads", "1", "--seed", "5"};
}

// A 24-step run with dropout, accumulation, clipping, warmup + cosine, evaluation every 6 steps and
// checkpoints every 6 steps; 19 steps make an epoch, so the run also crosses an epoch boundary.
struct ReferenceRun {
  ReferenceRun() {
    dir.write("corpus.txt", word_salad());
    dir.write("valid.txt", word_salad().substr(0, 600));
    expect_ok(run_trainer(resume_run_args(dir, dir.file("full"))));
  }
  ScratchDir dir{"train-run"};
};

}  // namespace

TEST_CASE("a tiny model overfits a tiny corpus, and generate replays what it memorised", "[train][overfit][generate]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", kMemorise);
  const std::string out = dir.file("out");
  const RunResult run = tiny_run(dir.file("corpus.txt"), out,
                                 {"--config_overrides", kTinyModel + ",resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
                                  "--per_device_train_batch_size", "4", "--learning_rate", "1e-2",
                                  "--lr_scheduler_type", "constant", "--max_steps", "200", "--logging_steps", "20"});
  expect_ok(run);
  CHECK_THAT(run.out, Catch::Contains("step 200/200 | loss"));
  CHECK_THAT(run.out, Catch::Contains("train_loss"));
  const auto all = records(out + "/metrics.jsonl");
  const double first = llmrdzv::json::parse(all.begin()->second).find("loss")->as_double();
  CHECK(first > 3.0);  // ln(257) = 5.55 at random init; the first 20-step mean stays high
  CHECK(last_train_loss(out + "/metrics.jsonl") < 0.05);
  for (const char* file : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "all_results.json",
                           "checkpoint-200/MANIFEST.json", "checkpoint-200/vocab.json", "checkpoint-200/merges.txt",
                           "checkpoint-200/tokenizer_config.json"}) {
    CHECK(fs::exists(out + "/" + file));
  }
  // A checkpoint is a model directory of its own, tokenizer included.
  const RunResult from_checkpoint = run_trainer({"generate", "--model", out + "/checkpoint-200", "--prompt",
                                                 kMemorise.substr(0, 8), "--max_new_tokens", "8", "--temperature", "0"});
  expect_ok(from_checkpoint);
  CHECK_THAT(from_checkpoint.out, Catch::Contains(kMemorise.substr(0, 16)));

  // Greedy decoding from the first 8 bytes of a block continues it byte for byte.
  const RunResult greedy = run_trainer({"generate", "--model", out, "--prompt", kMemorise.substr(0, 8),
                                        "--max_new_tokens", "8", "--temperature", "0"});
  expect_ok(greedy);
  CHECK(greedy.out == kMemorise.substr(0, 16) + "\n");

  // Sampling is reproducible by seed.
  const std::vector<std::string> sample = {"generate", "--model", out, "--prompt", "By", "--max_new_tokens", "12",
                                           "--temperature", "1.5", "--top_k", "20", "--seed", "9"};
  const RunResult a = run_trainer(sample);
  const RunResult b = run_trainer(sample);
  expect_ok(a);
  CHECK(a.out == b.out);
  CHECK(a.out.starts_with("By"));
}

TEST_CASE("the final model is saved in shards when asked, and generate loads them", "[train][shards]") {
  ScratchDir dir("train-shards");
  dir.write("corpus.txt", kMemorise);
  const std::string out = dir.file("out");
  const RunResult run = tiny_run(dir.file("corpus.txt"), out, {"--max_steps", "2", "--save_safetensors_max_shard_size", "20KB"});
  expect_ok(run);
  CHECK_THAT(run.out, Catch::Contains("tokenizer: the byte-level tokenizer (256 bytes + EOS): no --tokenizer_name for a fresh model"));
  CHECK_FALSE(fs::exists(out + "/model.safetensors"));
  CHECK(fs::exists(out + "/model.safetensors.index.json"));
  std::size_t shards = 0;
  for (const auto& entry : fs::directory_iterator(out)) shards += entry.path().filename().string().starts_with("model-");
  CHECK(shards >= 2);
  const RunResult generated = run_trainer({"generate", "--model", out, "--prompt", "By", "--max_new_tokens", "4"});
  expect_ok(generated);
  CHECK(generated.out.starts_with("By"));

  // A sharded model fine-tuned into its own directory is refused like a single-file one, and
  // its shards stay (they used to be replaced by the new model.safetensors).
  const std::string model = dir.file("sharded-model");
  fs::create_directories(model);
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name != "metrics.jsonl" && name != "all_results.json") fs::copy_file(entry.path(), model + "/" + name);
  }
  const RunResult into_itself = run_trainer({"--do_train", "--model_name_or_path", model, "--train_file", dir.file("corpus.txt"),
                                             "--output_dir", model, "--validation_split_percentage", "0", "--block_size",
                                             "16", "--max_steps", "1", "--threads", "1"});
  CHECK(into_itself.exit_code == 1);
  CHECK_THAT(into_itself.err, Catch::Contains("already holds a training run (model"));
  CHECK(fs::exists(model + "/model.safetensors.index.json"));
  CHECK_FALSE(fs::exists(model + "/model.safetensors"));
}

TEST_CASE("a run whose loss goes NaN finishes, saves its checkpoints and reports the loss as null", "[train][errors]") {
  ScratchDir dir("train-nan");
  dir.write("corpus.txt", kMemorise);
  const std::string out = dir.file("out");
  // A learning rate of 1e30 without clipping blows the weights up after the first step.
  const auto diverging = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--max_steps", "3", "--learning_rate", "1e30", "--max_grad_norm", "0", "--report_to", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return tiny_run(dir.file("corpus.txt"), out, args);
  };
  expect_ok(diverging({"--save_steps", "2", "--logging_steps", "1"}));  // it used to end with "JSON cannot
                                                                        // represent NaN or infinity" and save nothing
  CHECK(fs::exists(out + "/checkpoint-2"));
  CHECK(fs::exists(out + "/model.safetensors"));
  const auto results = llmrdzv::json::parse(read_file(out + "/all_results.json"));
  REQUIRE(results.find("train_loss"));
  CHECK(results.find("train_loss")->is_null());
  // The checkpoint holds the NaN loss sum as null and resumes from it.
  const RunResult resumed = diverging({"--resume_from_checkpoint", out + "/checkpoint-2"});
  expect_ok(resumed);
}

// SIGPIPE is what killed a survivor in an elastic run when its Gloo write hit the socket of the
// peer just killed; a log pipe that went away raises the same signal, deterministically.
TEST_CASE("an evaluation run into a training run's directory keeps its train results, as transformers' save_metrics does",
          "[train][results]") {
  ScratchDir dir("train-results");
  dir.write("corpus.txt", kMemorise);
  dir.write("valid.txt", kMemorise.substr(0, 200));
  const std::string out = dir.file("out");
  expect_ok(tiny_run(dir.file("corpus.txt"), out, {"--max_steps", "2", "--report_to", "none"}));
  const auto train = llmrdzv::json::parse(read_file(out + "/train_results.json"));
  CHECK(train.find("train_loss"));
  CHECK(train.find("global_step")->as_integer() == 2);
  CHECK_FALSE(train.find("eval_loss"));
  CHECK_FALSE(fs::exists(out + "/eval_results.json"));

  const std::vector<std::string> evaluate = {"--do_eval", "--model_name_or_path", out, "--validation_file",
                                             dir.file("valid.txt"), "--output_dir", out, "--block_size", "16",
                                             "--threads", "1", "--report_to", "none"};
  expect_ok(run_trainer(evaluate));
  const auto all = llmrdzv::json::parse(read_file(out + "/all_results.json"));
  REQUIRE(all.find("train_loss"));
  CHECK(all.find("train_loss")->as_double() == train.find("train_loss")->as_double());
  REQUIRE(all.find("eval_loss"));
  const auto eval = llmrdzv::json::parse(read_file(out + "/eval_results.json"));
  CHECK(eval.find("eval_loss")->as_double() == all.find("eval_loss")->as_double());
  CHECK(eval.find("perplexity"));
  CHECK_FALSE(eval.find("train_loss"));
  CHECK(llmrdzv::json::parse(read_file(out + "/train_results.json")).find("train_loss"));  // left alone

  // An all_results.json that is not JSON is replaced, and the run says so.
  dir.write("out/all_results.json", "{\"train_loss\": ");
  const RunResult again = run_trainer(evaluate);
  expect_ok(again);
  CHECK_THAT(again.out, Catch::Contains("warning: replacing " + out + "/all_results.json, which cannot be read"));
  const auto replaced = llmrdzv::json::parse(read_file(out + "/all_results.json"));
  CHECK(replaced.find("eval_loss"));
  CHECK_FALSE(replaced.find("train_loss"));
}

TEST_CASE("an output directory inside the --train_file folder is not read as training text", "[train][data]") {
  ScratchDir dir("train-nested");
  dir.write("data/a.txt", kMemorise);
  const std::string out = dir.file("data/out");
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--save_steps", "1", "--logging_steps", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return tiny_run(dir.file("data"), out, args);
  };
  expect_ok(run({"--max_steps", "2"}));
  // The resumed run finds metrics.jsonl, checkpoints, event files and the token cache in the
  // folder: read as text, the metrics lines (no "text" member) ended it.
  const RunResult resumed = run({"--max_steps", "3", "--resume_from_checkpoint", "latest"});
  expect_ok(resumed);
  CHECK_THAT(resumed.err, Catch::Contains("not reading " + out + " (this run's output, token cache or logging directory)"));
  CHECK(trainer_test::metric_series(out + "/metrics.jsonl", "loss").size() == 3);
}

TEST_CASE("save_strategy epoch saves at each epoch's end, save_strategy no saves no checkpoint but the final model", "[train][save]") {
  ScratchDir dir("train-save-strategy");
  dir.write("corpus.txt", kMemorise);  // four blocks: two steps of 2 an epoch
  const auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--save_steps", "1", "--logging_steps", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return tiny_run(dir.file("corpus.txt"), dir.file(out), args);
  };
  const auto checkpoints = [&](const std::string& out) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.file(out))) {
      if (entry.path().filename().string().starts_with("checkpoint-")) names.insert(entry.path().filename().string());
    }
    return names;
  };
  expect_ok(run("epoch", {"--save_strategy", "epoch", "--num_train_epochs", "3"}));
  CHECK(checkpoints("epoch") == std::set<std::string>{"checkpoint-2", "checkpoint-4", "checkpoint-6"});
  expect_ok(run("never", {"--save_strategy", "no", "--max_steps", "3"}));
  CHECK(checkpoints("never").empty());
  CHECK(fs::exists(dir.file("never/model.safetensors")));
  CHECK(trainer_test::metric_series(dir.file("never/metrics.jsonl"), "loss").size() == 3);
}

TEST_CASE("profile_steps writes a Chrome trace of the chosen steps with torch's ops", "[train][profile]") {
  ScratchDir dir("train-profile");
  dir.write("corpus.txt", kMemorise);
  const std::string out = dir.file("out");
  const RunResult run = tiny_run(dir.file("corpus.txt"), out, {"--max_steps", "4", "--logging_steps", "1", "--profile_steps", "2"});
  expect_ok(run);
  CHECK_THAT(run.out, Catch::Contains("profile written to " + out + "/profile/"));
  const auto trace = llmrdzv::json::parse(read_file(out + "/profile/rank-0.json"));
  const auto* events = trace.find("traceEvents");
  REQUIRE(events);
  std::set<std::string> names;
  for (const auto& event : events->as_array()) {
    if (const auto* name = event.find("name"); name && name->is_string()) names.insert(name->as_string());
  }
  const auto any = [&](auto&& predicate) { return std::any_of(names.begin(), names.end(), predicate); };
  // Matrix products (aten::mm, addmm, bmm) forward, and autograd's backward nodes.
  CHECK(any([](const std::string& n) { return n.starts_with("aten::") && n.find("mm") != std::string::npos; }));
  CHECK(any([](const std::string& n) { return n.find("Backward") != std::string::npos; }));
  CHECK(trainer_test::metric_series(out + "/metrics.jsonl", "loss").size() == 4);
}

TEST_CASE("a run whose stdout pipe has no reader any more still trains to the end and saves", "[train][signals]") {
  ScratchDir dir("train-sigpipe");
  dir.write("corpus.txt", kMemorise);
  const std::string out = dir.file("out");
  const RunResult run = tiny_run(dir.file("corpus.txt"), out, {"--max_steps", "3", "--logging_steps", "1"},
                                 trainer_test::Stdout::closed_pipe);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(fs::exists(out + "/model.safetensors"));
  CHECK(records(out + "/metrics.jsonl").size() == 3);
}

// A batch too big for host memory: torch's CPU allocator fails (here under a 6 GiB cap on the
// address space, of which the trainer's libraries and model take about 3) and the run ends with
// the trainer's message and advice instead of torch's "[enforce fail at alloc_cpu.cpp]" line.
TEST_CASE("a batch too big for host memory ends with one message saying what to change", "[train][errors]") {
  ScratchDir dir("train-host-oom");
  std::string corpus;
  while (corpus.size() < 70000) corpus += word_salad();  // 64 blocks of 1024 tokens
  dir.write("corpus.txt", corpus);
  // Two layers of width 1024 at 64 x 1024 tokens keep about 9 GB of activations for the backward.
  trainer_test::TrainerProcess process({"--do_train", "--train_file", dir.file("corpus.txt"),
                                        "--validation_split_percentage", "0", "--output_dir", dir.file("out"),
                                        "--config_overrides", "n_layer=2,n_head=8,n_embd=1024,n_positions=1024",
                                        "--block_size", "1024", "--per_device_train_batch_size", "64",
                                        "--max_steps", "1", "--threads", "1", "--use_cpu"},
                                       trainer_test::Stdout::captured, std::uint64_t{6} << 30);
  const int exit_code = process.wait();
  const std::string err = process.stderr_text();
  INFO("stderr:\n" << err);
  CHECK(exit_code == 1);
  CHECK_THAT(err, Catch::Contains("trainer: error: host memory ran out") &&
                      Catch::Contains("use a smaller --per_device_train_batch_size") &&
                      Catch::Contains("or --gradient_checkpointing\n"));
  CHECK_THAT(err, !Catch::Contains("offload") && !Catch::Contains("alloc_cpu") && !Catch::Contains("enforce fail"));
}

TEST_CASE("resuming from a checkpoint repeats the uninterrupted run exactly", "[train][resume]") {
  ReferenceRun reference;
  const ScratchDir& dir = reference.dir;
  std::vector<std::string> args = resume_run_args(dir, dir.file("resumed"));
  args.insert(args.end(), {"--resume_from_checkpoint", dir.file("full/checkpoint-12")});
  const RunResult resumed = run_trainer(args);
  expect_ok(resumed);
  CHECK_THAT(resumed.out, Catch::Contains("resuming from " + dir.file("full/checkpoint-12") + " at step 12"));

  const auto full = records(dir.file("full/metrics.jsonl"));
  const auto again = records(dir.file("resumed/metrics.jsonl"));
  int compared = 0;
  for (const auto& [key, line] : again) {
    INFO(key.first << " step " << key.second);
    REQUIRE(full.contains(key));
    CHECK(full.at(key) == line);
    ++compared;
  }
  CHECK(compared == 12 + 2);  // train steps 13..24, evaluations at 18 and 24
  CHECK(read_file(dir.file("resumed/model.safetensors")) == read_file(dir.file("full/model.safetensors")));
  const auto full_results = llmrdzv::json::parse(read_file(dir.file("full/all_results.json")));
  const auto resumed_results = llmrdzv::json::parse(read_file(dir.file("resumed/all_results.json")));
  CHECK(full_results.find("train_loss")->as_double() == resumed_results.find("train_loss")->as_double());
  CHECK(full_results.find("eval_loss")->as_double() == resumed_results.find("eval_loss")->as_double());
}

TEST_CASE("resumed from an earlier checkpoint into its own directory: each step logged once, the new checkpoints kept",
          "[train][resume][save]") {
  // The reference run saved checkpoints 6, 12, 18 and 24. Resuming it from checkpoint-6 to step 12
  // abandons 18 and 24: --save_total_limit 1 must keep the new run's 12, not the old run's 24, and
  // metrics.jsonl must not show steps 7..24 of the old run beside 7..12 of the new one.
  ReferenceRun reference;
  const ScratchDir& dir = reference.dir;
  // An evaluation of an earlier checkpoint into the run's directory trains nothing: it cuts nothing.
  const auto before = records(dir.file("full/metrics.jsonl"));
  std::vector<std::string> eval_only = resume_run_args(dir, dir.file("full"));
  eval_only.erase(std::find(eval_only.begin(), eval_only.end(), "--do_train"));
  eval_only.insert(eval_only.end(), {"--resume_from_checkpoint", dir.file("full/checkpoint-6")});
  expect_ok(run_trainer(eval_only));
  for (const auto& [key, line] : before) {
    INFO(key.first << " step " << key.second);
    CHECK(records(dir.file("full/metrics.jsonl")).contains(key));
  }

  std::vector<std::string> args = resume_run_args(dir, dir.file("full"));
  args.insert(args.end(), {"--resume_from_checkpoint", dir.file("full/checkpoint-6"), "--max_steps", "12",
                           "--save_total_limit", "1"});
  const RunResult resumed = run_trainer(args);
  expect_ok(resumed);
  CHECK_THAT(resumed.out, Catch::Contains("metrics.jsonl: removed"));
  std::vector<std::int64_t> checkpoints;
  for (const auto& entry : fs::directory_iterator(dir.file("full"))) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("checkpoint-")) checkpoints.push_back(std::stoll(name.substr(11)));
  }
  CHECK(checkpoints == std::vector<std::int64_t>{12});
  std::vector<std::int64_t> steps;
  std::istringstream lines(read_file(dir.file("full/metrics.jsonl")));
  for (std::string line; std::getline(lines, line);) {
    const auto record = llmrdzv::json::parse(line);
    if (record.find("loss") && record.find("step")) steps.push_back(record.find("step")->as_integer());
  }
  std::vector<std::int64_t> every_step(12);
  std::iota(every_step.begin(), every_step.end(), 1);
  CHECK(steps == every_step);
}

TEST_CASE("an old run is replaced by --overwrite_output_dir only once the new run has loaded", "[train][save][errors]") {
  ScratchDir dir("train-overwrite");
  dir.write("corpus.txt", word_salad());
  const std::string out = dir.file("out");
  expect_ok(tiny_run(dir.file("corpus.txt"), out, {"--max_steps", "2", "--save_steps", "1"}));
  const std::string old_model = read_file(out + "/model.safetensors");

  // A new run that fails to start (its corpus is missing) leaves the old run whole.
  const RunResult typo = tiny_run(dir.file("corpsu.txt"), out, {"--max_steps", "2", "--overwrite_output_dir"});
  CHECK(typo.exit_code == 1);
  CHECK_THAT(typo.err, Catch::Contains("corpsu.txt"));
  for (const char* kept : {"model.safetensors", "checkpoint-1", "checkpoint-2", "metrics.jsonl", "all_results.json"}) {
    INFO(kept);
    CHECK(fs::exists(out + "/" + kept));
  }

  // Fine-tuning the old run's own model into its directory: loaded first, then replaced.
  const RunResult again = run_trainer({"--do_train", "--train_file", dir.file("corpus.txt"), "--output_dir", out,
                                       "--model_name_or_path", out, "--overwrite_output_dir",
                                       "--validation_split_percentage", "0", "--block_size", "16",
                                       "--per_device_train_batch_size", "2", "--max_steps", "1", "--threads", "1"});
  expect_ok(again);
  CHECK(fs::exists(out + "/checkpoint-1"));
  CHECK_FALSE(fs::exists(out + "/checkpoint-2"));
  CHECK(read_file(out + "/model.safetensors") != old_model);

  // A run that failed before its first record left an empty metrics.jsonl: it is no run to refuse.
  const std::string fresh = dir.file("fresh");
  fs::create_directories(fresh);
  dir.write("fresh/metrics.jsonl", "");
  expect_ok(tiny_run(dir.file("corpus.txt"), fresh, {"--max_steps", "1"}));
}

TEST_CASE("a step's record does not time the evaluation and the checkpoint before it", "[train][metrics]") {
  // Evaluation on many blocks after step 2 and a checkpoint: step 3's record must time step 3.
  ScratchDir dir("train-eval-time");
  dir.write("corpus.txt", word_salad());
  std::string big;
  while (big.size() < 200000) big += word_salad();
  dir.write("valid.txt", big);
  const RunResult run = run_trainer({"--do_train", "--do_eval", "--train_file", dir.file("corpus.txt"),
                                     "--validation_file", dir.file("valid.txt"), "--output_dir", dir.file("out"),
                                     "--config_overrides", kTinyModel, "--block_size", "16",
                                     "--per_device_train_batch_size", "2", "--max_steps", "4", "--eval_steps", "2",
                                     "--save_steps", "2", "--logging_steps", "1", "--threads", "1"});
  expect_ok(run);
  const std::vector<double> times = trainer_test::metric_series(dir.file("out/metrics.jsonl"), "step_time_s");
  REQUIRE(times.size() == 4);
  // The loop's wall time (train_runtime) holds the evaluation of ~12000 blocks after step 2, far
  // longer than the 4 steps of 2 sequences of 16 tokens: the steps' own times leave it out.
  const double runtime = llmrdzv::json::parse(read_file(dir.file("out/train_results.json"))).find("train_runtime")->as_double();
  INFO("step times: " << times[0] << " " << times[1] << " " << times[2] << " " << times[3] << ", train_runtime " << runtime);
  CHECK(times[0] + times[1] + times[2] + times[3] < 0.5 * runtime);
}

// Logging every step, a record is written once the next step is under way (train_loop.cpp), except
// before a checkpoint, an evaluation and the last step: the file must still read in step order,
// one training record per step, each evaluation right after its step's record.
TEST_CASE("metrics.jsonl lists every step once and in order, each evaluation after its step's record", "[train][metrics]") {
  ReferenceRun reference;
  std::istringstream lines(read_file(reference.dir.file("full/metrics.jsonl")));
  std::vector<std::int64_t> train_steps, eval_steps;
  for (std::string line; std::getline(lines, line);) {
    const auto record = llmrdzv::json::parse(line);
    if (!record.find("step")) continue;  // the run's closing summary
    const std::int64_t step = record.find("step")->as_integer();
    if (record.find("eval_loss")) {
      REQUIRE_FALSE(train_steps.empty());
      CHECK(step == train_steps.back());  // no later step's record before it
      eval_steps.push_back(step);
    } else if (record.find("loss")) {
      REQUIRE(record.find("grad_norm"));
      CHECK(record.find("grad_norm")->as_double() > 0.0);
      train_steps.push_back(step);
    }
  }
  std::vector<std::int64_t> every_step(24);
  std::iota(every_step.begin(), every_step.end(), 1);
  CHECK(train_steps == every_step);
  CHECK(eval_steps == std::vector<std::int64_t>{6, 12, 18, 24});
}

TEST_CASE("every step's record on the CPU times that step and so does the last one", "[train][metrics]") {
  // A model whose forward and backward take far longer than its optimizer step. A record timed
  // from the middle of one step to the middle of the next would still look right, except the
  // last, which would then hold only its optimizer step (a hundredth of the others here).
  ScratchDir dir("train-step-times");
  dir.write("corpus.txt", word_salad());
  const RunResult run = run_trainer({"--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage",
                                     "0", "--output_dir", dir.file("out"), "--config_overrides",
                                     "n_layer=2,n_head=4,n_embd=128,n_positions=128,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
                                     "--block_size", "128", "--per_device_train_batch_size", "8", "--max_steps", "5",
                                     "--logging_steps", "1", "--save_strategy", "no", "--threads", "1"});
  expect_ok(run);
  const std::vector<double> times = trainer_test::metric_series(dir.file("out/metrics.jsonl"), "step_time_s");
  REQUIRE(times.size() == 5);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[2];
  INFO("step times: " << times[0] << " " << times[1] << " " << times[2] << " " << times[3] << " " << times[4]);
  for (const double t : times) CHECK(t > median / 4);
}

TEST_CASE("TensorBoard shows the run's metrics at their steps, and a run resumed elsewhere leaves them alone", "[train][tensorboard]") {
  ReferenceRun reference;
  const ScratchDir& dir = reference.dir;
  const fs::path logdir = tensorboard_dir(dir.file("full"));
  const trainer_test::TensorBoardData seen = trainer_test::read_with_tensorboard(logdir);
  // Every scalar at every step with its metrics.jsonl value: 24 logging steps, evaluations at
  // steps 6, 12, 18 and the final one at 24.
  const auto expected = jsonl_curves(dir.file("full/metrics.jsonl"));
  for (const char* tag : {"train/loss", "train/learning_rate", "train/grad_norm", "train/tokens_per_second",
                          "train/step_time", "train/comm_wait", "train/epoch", "eval/loss", "eval/perplexity",
                          "eval/bits_per_byte"}) {
    INFO(tag);
    REQUIRE(expected.contains(tag));
    REQUIRE(seen.scalars.contains(tag));
    CHECK(expected.at(tag).size() == (std::string(tag).starts_with("train/") ? 24u : 4u));
    check_curve(seen.scalars.at(tag), expected.at(tag));
  }
  CHECK(seen.scalars.size() == expected.size());  // no tag beyond those metrics.jsonl has
  CHECK(seen.scalars.at("train/tokens_per_second")[0].second.value() > 0);
  const auto& eval_loss = seen.scalars.at("eval/loss");
  const auto& perplexity = seen.scalars.at("eval/perplexity");
  for (std::size_t i = 0; i < perplexity.size(); ++i) {  // exp(loss), within float32 rounding amplified by exp
    INFO("eval point " << i);
    CHECK(perplexity[i].second.value() == Approx(std::exp(eval_loss[i].second.value())).epsilon(1e-6));
  }
  // transformers' default logging_dir: <output_dir>/runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname>.
  CHECK(logdir.parent_path() == fs::path(dir.file("full/runs")));
  const std::string run_name = logdir.filename().string();
  std::smatch parts;
  INFO("run directory " << run_name);
  REQUIRE(std::regex_match(run_name, parts,
                           std::regex("(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)(0[1-9]|[12][0-9]|3[01])_"
                                      "([01][0-9]|2[0-3])-[0-5][0-9]-[0-5][0-9]_(.+)")));
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof host - 1) == 0);
  CHECK(parts[4].str() == host);
  REQUIRE(seen.texts.at("args").size() == 1);
  CHECK_THAT(seen.texts.at("args")[0].second, Catch::Contains("learning_rate: 0.003\n") && Catch::Contains("max_steps: 24\n"));

  // Resumed into another output_dir: a run of its own there, the original's curves untouched.
  const auto before = result_curves(logdir);
  std::vector<std::string> args = resume_run_args(dir, dir.file("fork"));
  args.insert(args.end(), {"--resume_from_checkpoint", dir.file("full/checkpoint-12")});
  expect_ok(run_trainer(args));
  CHECK(result_curves(logdir) == before);
  const auto fork = result_curves(tensorboard_dir(dir.file("fork")));
  REQUIRE(fork.at("train/loss").size() == 12);
  CHECK(fork.at("train/loss").front().first == 13);

  // An output_dir moved elsewhere takes its curves along: its resume continues the moved copy.
  fs::copy(dir.file("full"), dir.file("moved"), fs::copy_options::recursive);
  std::vector<std::string> moved = resume_run_args(dir, dir.file("moved"));
  moved.insert(moved.end(), {"--resume_from_checkpoint", dir.file("moved/checkpoint-12")});
  const RunResult resumed = run_trainer(moved);
  expect_ok(resumed);
  CHECK_THAT(resumed.out, Catch::Contains("TensorBoard: removed 14 events after step 12 from " + dir.file("moved/runs/")));
  CHECK(result_curves(logdir) == before);
  CHECK(result_curves(tensorboard_dir(dir.file("moved"))) == before);  // steps 13-24 again, each once
}

TEST_CASE("report_to none writes no event files, and report_to all writes them where logging_dir asks", "[train][tensorboard]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", word_salad());
  const std::vector<std::string> base = {"--do_train", "--train_file", dir.file("corpus.txt"), "--config_overrides", kTinyModel,
                                         "--block_size", "16", "--max_steps", "2", "--logging_steps", "1", "--threads", "1"};
  std::vector<std::string> none = base;
  none.insert(none.end(), {"--output_dir", dir.file("none"), "--report_to", "none"});
  const RunResult quiet = run_trainer(none);
  expect_ok(quiet);
  CHECK_FALSE(fs::exists(dir.file("none/runs")));
  CHECK_THAT(quiet.out, !Catch::Contains("TensorBoard"));
  std::vector<std::string> placed = base;  // report_to all: TensorBoard, the one integration the trainer has
  placed.insert(placed.end(), {"--output_dir", dir.file("placed"), "--logging_dir", dir.file("tb/here"), "--report_to", "all"});
  const RunResult logged = run_trainer(placed);
  expect_ok(logged);
  CHECK_THAT(logged.out, Catch::Contains("TensorBoard: " + dir.file("tb/here") + "/events.out.tfevents."));
  CHECK_FALSE(fs::exists(dir.file("placed/runs")));
  CHECK(trainer_test::read_with_tensorboard(dir.file("tb/here")).scalars.at("train/loss").size() == 2);
}

TEST_CASE("a model with an untied LM head trains, resumes exactly and exports its own head", "[train][resume][untied]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", word_salad());
  const auto args = [&](const std::string& output) {
    return std::vector<std::string>{"--do_train", "--train_file", dir.file("corpus.txt"), "--output_dir", output,
                                    "--token_cache_dir", dir.file("cache"), "--config_overrides", kTinyModel + ",tie_word_embeddings=false,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
                                    "--block_size", "16", "--max_steps", "8", "--save_steps", "4", "--logging_steps", "1",
                                    "--learning_rate", "3e-3", "--threads", "1", "--report_to", "none"};
  };
  expect_ok(run_trainer(args(dir.file("full"))));
  std::vector<std::string> resume = args(dir.file("resumed"));
  resume.insert(resume.end(), {"--resume_from_checkpoint", dir.file("full/checkpoint-4")});
  expect_ok(run_trainer(resume));
  CHECK(read_file(dir.file("resumed/model.safetensors")) == read_file(dir.file("full/model.safetensors")));
  CHECK(read_file(dir.file("full/model.safetensors")).find("lm_head.weight") != std::string::npos);
  CHECK(llmrdzv::json::parse(read_file(dir.file("full/config.json"))).find("tie_word_embeddings")->as_bool() == false);
  // And on 2 ranks with the optimizer offloaded, the same losses as one rank.
  std::vector<std::string> two = args(dir.file("two"));
  two.insert(two.end(), {"--nproc", "2", "--per_device_train_batch_size", "4", "--offload", "optimizer"});
  std::vector<std::string> one = args(dir.file("one"));
  one.insert(one.end(), {"--per_device_train_batch_size", "8"});
  expect_ok(run_trainer(two));
  expect_ok(run_trainer(one));
  trainer_test::expect_close(trainer_test::metric_series(dir.file("two/metrics.jsonl"), "loss"),
                             trainer_test::metric_series(dir.file("one/metrics.jsonl"), "loss"), 1e-5);
}

TEST_CASE("a damaged checkpoint is refused and 'latest' falls back to the previous one", "[train][resume][errors]") {
  ReferenceRun reference;
  const ScratchDir& dir = reference.dir;
  // What a save killed midway through could leave: the newest checkpoint gone, the one before
  // with a short file.
  const std::string damaged = dir.file("damaged");
  fs::copy(dir.file("full"), damaged, fs::copy_options::recursive);
  fs::remove_all(damaged + "/checkpoint-24");
  fs::resize_file(damaged + "/checkpoint-18/optimizer.safetensors",
                  fs::file_size(damaged + "/checkpoint-18/optimizer.safetensors") / 2);

  std::vector<std::string> explicit_args = resume_run_args(dir, damaged);
  explicit_args.insert(explicit_args.end(), {"--resume_from_checkpoint", damaged + "/checkpoint-18"});
  const RunResult refused = run_trainer(explicit_args);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("checkpoint-18") && Catch::Contains("optimizer.safetensors"));

  std::vector<std::string> latest_args = resume_run_args(dir, damaged);
  latest_args.insert(latest_args.end(), {"--resume_from_checkpoint", "latest"});
  const RunResult resumed = run_trainer(latest_args);
  expect_ok(resumed);
  CHECK_THAT(resumed.err, Catch::Contains("skipping broken checkpoint") && Catch::Contains("checkpoint-18"));
  CHECK_THAT(resumed.out, Catch::Contains("at step 12"));
  CHECK(records(damaged + "/metrics.jsonl") == records(dir.file("full/metrics.jsonl")));
  CHECK(read_file(damaged + "/model.safetensors") == read_file(dir.file("full/model.safetensors")));
}

TEST_CASE("a run killed at any moment resumes from its latest checkpoint with the same results", "[train][resume][kill]") {
  ReferenceRun reference;
  const ScratchDir& dir = reference.dir;
  for (const int delay_ms : {0, 7, 23}) {
    const std::string killed = dir.file("killed-" + std::to_string(delay_ms));
    std::vector<std::string> args = resume_run_args(dir, killed);
    args.insert(args.end(), {"--save_steps", "1"});  // a save after every step: kills land in saves often
    trainer_test::TrainerProcess process(args);
    // Wait for two completed checkpoints, then SIGKILL.
    while (process.running()) {
      const std::string out = process.stdout_text();
      if (out.find("saved") != out.rfind("saved")) break;
      usleep(1000);
    }
    usleep(delay_ms * 1000);
    REQUIRE(process.kill_now() == 128 + SIGKILL);  // killed mid-run, not already finished

    std::vector<std::string> resume = resume_run_args(dir, killed);
    resume.insert(resume.end(), {"--resume_from_checkpoint", "latest"});
    const RunResult resumed = run_trainer(resume);
    expect_ok(resumed);
    INFO("killed after " << delay_ms << " ms; resumed run said:\n" << resumed.out);
    CHECK(records(killed + "/metrics.jsonl") == records(dir.file("full/metrics.jsonl")));
    CHECK(read_file(killed + "/model.safetensors") == read_file(dir.file("full/model.safetensors")));
    // The resumed run continued the killed run's TensorBoard directory: every step once, as in the
    // uninterrupted run, whatever the kill left after the checkpoint (steps, a torn record).
    CHECK(result_curves(tensorboard_dir(killed)) == result_curves(tensorboard_dir(dir.file("full"))));
  }
}

TEST_CASE("bad input ends the trainer with a message naming it", "[train][errors]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", word_salad());
  // The defaults (a 5% validation split, batches of 8), unlike tiny_run's.
  const std::vector<std::string> base = {"--do_train", "--train_file", dir.file("corpus.txt"), "--output_dir",
                                         dir.file("out"), "--config_overrides", kTinyModel, "--block_size", "16",
                                         "--max_steps", "2", "--threads", "1"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_trainer(args);
  };

  const RunResult typo = with({"--lerning_rate", "1e-3"});
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::Contains("trainer: error: unknown option '--lerning_rate' (did you mean --learning_rate?)"));

  const RunResult no_corpus =
      run_trainer({"--do_train", "--train_file", dir.file("missing.txt"), "--output_dir", dir.file("o2")});
  CHECK(no_corpus.exit_code == 1);
  CHECK_THAT(no_corpus.err, Catch::Contains(dir.file("missing.txt")));

  const RunResult long_block = with({"--block_size", "64"});
  CHECK(long_block.exit_code == 1);
  CHECK_THAT(long_block.err, Catch::Contains("--block_size 64 exceeds the model's 32 positions"));

  const RunResult bad_override = with({"--config_overrides", "n_embd=33"});
  CHECK(bad_override.exit_code == 1);
  CHECK_THAT(bad_override.err, Catch::Contains("n_embd"));

  // Absurd sizes are refused naming the fields and the size, not by the allocator.
  const RunResult huge = with({"--config_overrides", "n_layer=1000000000"});
  CHECK(huge.exit_code == 1);
  CHECK_THAT(huge.err, Catch::Contains("n_layer=1000000000, n_embd=768") && Catch::Contains("parameters") &&
                           Catch::Contains("more than any machine holds"));
  CHECK(huge.err.find("allocate") == std::string::npos);
  const RunResult too_big = with({"--config_overrides", "n_layer=400,n_embd=4096,n_head=32"});  // 80B parameters
  CHECK(too_big.exit_code == 1);
  CHECK_THAT(too_big.err, Catch::Contains("n_layer=400, n_embd=4096") && Catch::Contains("of memory"));
  // A saved model whose config.json says it is that big is refused the same way, before a weight
  // is read (a model that big used to be read until the OOM killer ended the trainer silently).
  expect_ok(with({"--output_dir", dir.file("small")}));
  const std::string config_path = dir.file("small/config.json");
  std::string config = read_file(config_path);
  const auto layers = config.find("\"n_layer\": 2");
  REQUIRE(layers != std::string::npos);
  config.replace(layers, std::string("\"n_layer\": 2").size(), "\"n_layer\": 400");
  for (const char* key : {"\"n_embd\": 32", "\"n_head\": 2"}) {
    const auto at = config.find(key);
    REQUIRE(at != std::string::npos);
    config.replace(at, std::string(key).size(), std::string(key).starts_with("\"n_embd") ? "\"n_embd\": 4096" : "\"n_head\": 32");
  }
  dir.write("small/config.json", config);
  const RunResult big_saved = run_trainer({"--do_train", "--model_name_or_path", dir.file("small"), "--train_file",
                                           dir.file("corpus.txt"), "--output_dir", dir.file("o-big"), "--max_steps", "1"});
  CHECK(big_saved.exit_code == 1);
  CHECK_THAT(big_saved.err, Catch::Contains("the model in '" + dir.file("small") + "'") &&
                                Catch::Contains("n_layer=400, n_embd=4096") && Catch::Contains("of memory"));
  const RunResult big_generate = run_trainer({"generate", "--model", dir.file("small"), "--prompt", "x"});
  CHECK(big_generate.exit_code == 1);
  CHECK_THAT(big_generate.err, Catch::Contains("of memory"));

  // Named directly, a binary file is refused (inside a folder it is skipped, below).
  dir.write("blob.bin", std::string("\x7f" "ELF\0\0\0", 7) + word_salad());
  const RunResult binary = run_trainer({"--do_train", "--train_file", dir.file("blob.bin"), "--output_dir",
                                        dir.file("binary-out"), "--config_overrides", kTinyModel, "--max_steps", "1"});
  CHECK(binary.exit_code == 1);
  CHECK_THAT(binary.err, Catch::Contains(dir.file("blob.bin") + ": looks like a binary file"));

  expect_ok(with({}));
  const RunResult again = with({});
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Catch::Contains("already holds a training run") && Catch::Contains("--overwrite_output_dir"));
  expect_ok(with({"--overwrite_output_dir"}));

  const RunResult no_model = run_trainer({"generate", "--model", dir.file("nowhere"), "--prompt", "x"});
  CHECK(no_model.exit_code == 1);
  CHECK_THAT(no_model.err, Catch::Contains("--model '" + dir.file("nowhere") + "' is not a directory (it does not exist), "
                                           "nor a hub model name"));

  // A folder with a binary file: the text trains, and the user is told what was left out.
  dir.write("folder/notes.txt", word_salad());
  dir.write("folder/blob.bin", std::string("\x7f" "ELF\0\0\0", 7) + word_salad());
  const RunResult folder = run_trainer({"--do_train", "--train_file", dir.file("folder"), "--output_dir",
                                        dir.file("folder-out"), "--config_overrides", kTinyModel, "--block_size", "16",
                                        "--max_steps", "1", "--threads", "1"});
  expect_ok(folder);
  CHECK_THAT(folder.err, Catch::Contains("skipped 1 binary file(s)") && Catch::Contains(dir.file("folder/blob.bin")));

  const RunResult no_checkpoint =
      with({"--overwrite_output_dir", "--resume_from_checkpoint", dir.file("out/checkpoint-99")});
  CHECK(no_checkpoint.exit_code == 1);
  CHECK_THAT(no_checkpoint.err, Catch::Contains("checkpoint-99"));
}

TEST_CASE("trainer tokenizer makes a vocabulary that --tokenizer_name trains on and the model carries", "[train][tokenizer]") {
  ScratchDir dir("train-bpe");
  dir.write("corpus.txt", word_salad());
  const std::string tok = dir.file("tok");
  const RunResult made = run_trainer({"tokenizer", "--train_file", dir.file("corpus.txt"), "--vocab_size", "320",
                                      "--min_frequency", "1", "--output_dir", tok, "--threads", "2"});
  expect_ok(made);
  CHECK_THAT(made.err, Catch::Contains("trainer tokenizer: counted") && Catch::Contains(" merges, 320 tokens in "));
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json"}) {
    CHECK(fs::exists(tok + "/" + name));
  }

  const std::string out = dir.file("out");
  const RunResult run = tiny_run(dir.file("corpus.txt"), out, {"--tokenizer_name", tok, "--max_steps", "2"});
  expect_ok(run);
  CHECK(fs::exists(out + "/tokenizer.json"));
  const RunResult generated = run_trainer({"generate", "--model", out, "--prompt", "the", "--max_new_tokens", "4"});
  expect_ok(generated);
  CHECK(generated.out.starts_with("the"));

  // Bad settings and input: one line naming the problem.
  const RunResult small = run_trainer({"tokenizer", "--train_file", dir.file("corpus.txt"), "--vocab_size", "200",
                                       "--output_dir", dir.file("small")});
  CHECK(small.exit_code == 1);
  CHECK_THAT(small.err, Catch::Contains("trainer: error: the vocabulary size 200 is smaller than the 257 tokens"));
  dir.write("bad.txt", "good\n\xC3\x28 bad\n");
  const RunResult bad = run_trainer({"tokenizer", "--train_file", dir.file("bad.txt"), "--output_dir", dir.file("bad")});
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.err, Catch::Contains("bad.txt:2: not UTF-8 (byte 0xC3 at column 1)"));
  const RunResult usage = run_trainer({"tokenizer", "--output_dir", dir.file("x")});
  CHECK(usage.exit_code == 2);
  CHECK_THAT(usage.err, Catch::Contains("tokenizer needs --train_file"));
}
