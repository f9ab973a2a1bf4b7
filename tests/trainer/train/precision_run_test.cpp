// Mixed precision end to end on the CPU (where bf16 and fp16 work, slowly; the same runs on a GPU
// are in tests/trainer/gpu): bf16 and fp16 runs follow the fp32 run's losses within a stated
// tolerance with fp32 master weights in the optimizer, fp16 reports its loss scale, a bf16 run
// resumes exactly, bf16 data parallelism (with and without offload) matches one rank, and
// precision flags the device cannot honour are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"
#include "trainer_process.hpp"

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_close;
using trainer_test::expect_ok;
using trainer_test::metric_series;
using trainer_test::run_trainer;
using trainer_test::RunResult;

namespace {

std::string corpus() {
  return trainer_test::word_corpus({"bf16", "mantissa", "exponent", "master", "weight", "scale", "round", "float"}, 23, 900, 9);
}

// 20 steps of a tiny GPT-2 (no dropout), 2 micro-batches a step.
std::vector<std::string> run_args(const ScratchDir& dir, const std::string& out, std::vector<std::string> extra,
                                  int per_device = 4, int accumulation = 2) {
  std::vector<std::string> args = {
      "--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0", "--output_dir", out,
      "--token_cache_dir", dir.file("cache"), "--use_cpu", "--config_overrides",
      "n_layer=2,n_head=2,n_embd=64,n_positions=32,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0", "--block_size", "16",
      "--per_device_train_batch_size", std::to_string(per_device), "--gradient_accumulation_steps",
      std::to_string(accumulation), "--learning_rate", "3e-3", "--weight_decay", "0.1", "--max_grad_norm", "1.0",
      "--warmup_steps", "2", "--max_steps", "20", "--logging_steps", "1", "--save_steps", "10", "--threads", "1",
      "--seed", "4"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}


// The dtype of every tensor in a safetensors file's header.
std::vector<std::string> safetensors_dtypes(const std::string& path) {
  const std::string bytes = read_file(path);
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data(), sizeof length);
  const auto header = llmrdzv::json::parse(bytes.substr(8, length));
  std::vector<std::string> dtypes;
  for (const auto& [name, info] : header.as_object()) {
    if (name != "__metadata__") dtypes.push_back(info.find("dtype")->as_string());
  }
  return dtypes;
}

struct Fp32Run {
  Fp32Run() {
    dir.write("corpus.txt", corpus());
    const RunResult run = run_trainer(run_args(dir, dir.file("fp32"), {"--bf16", "false"}));
    expect_ok(run);
    CHECK_THAT(run.out, Catch::Contains("training on cpu in fp32"));
    losses = metric_series(dir.file("fp32/metrics.jsonl"), "loss");
    REQUIRE(losses.size() == 20);
    REQUIRE(losses.back() < losses.front() * 0.8);  // it learns: the comparison means something
  }
  ScratchDir dir{"precision-run"};
  std::vector<double> losses;
};

}  // namespace

TEST_CASE("bf16 training on the CPU follows fp32 within 3% per step and exports bf16 weights", "[train][precision]") {
  Fp32Run fp32;
  const RunResult run = run_trainer(run_args(fp32.dir, fp32.dir.file("bf16"), {"--bf16"}));
  expect_ok(run);
  CHECK_THAT(run.out, Catch::Contains("training on cpu in bf16 (fp32 master weights)"));
  expect_close(metric_series(fp32.dir.file("bf16/metrics.jsonl"), "loss"), fp32.losses, 0.03);
  for (const std::string& dtype : safetensors_dtypes(fp32.dir.file("bf16/model.safetensors"))) CHECK(dtype == "BF16");
  for (const std::string& dtype : safetensors_dtypes(fp32.dir.file("fp32/model.safetensors"))) CHECK(dtype == "F32");
  // The checkpoint keeps the fp32 masters next to the moments.
  bool master = false;
  for (const auto& entry : std::filesystem::directory_iterator(fp32.dir.file("bf16/checkpoint-20"))) {
    if (entry.path().filename().string().starts_with("optimizer")) {
      master = read_file(entry.path().string()).find("\"master.transformer.wte.weight\"") != std::string::npos;
    }
  }
  CHECK(master);
}

TEST_CASE("fp16 training on the CPU scales its loss and follows fp32 within 3% per step", "[train][precision]") {
  Fp32Run fp32;
  const RunResult run = run_trainer(run_args(fp32.dir, fp32.dir.file("fp16"), {"--fp16"}));
  expect_ok(run);
  CHECK_THAT(run.out, Catch::Contains("training on cpu in fp16 (fp32 master weights, dynamic loss scaling)"));
  expect_close(metric_series(fp32.dir.file("fp16/metrics.jsonl"), "loss"), fp32.losses, 0.03);
  for (const double scale : metric_series(fp32.dir.file("fp16/metrics.jsonl"), "loss_scale")) {
    CHECK((scale == 65536 || scale == 32768));  // at most one overflow in 20 steps of this model
  }
}

TEST_CASE("an fp16 step skipped for overflow holds the learning-rate schedule, also across a resume",
          "[train][precision][resume]") {
  // This run (a learning rate of 2e-3 on a 128-wide model) overflows at loss scale 65536 on its
  // 7th step (then at 32768 on its 8th), on the CPU as on an H200.
  ScratchDir dir("precision-skip");
  dir.write("corpus.txt", trainer_test::word_corpus({"kernel", "stream", "event", "tensor", "core", "warp", "block",
                                                     "grid", "nccl"}, 29, 2000, 11));
  const auto args = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> a = {
        "--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0", "--output_dir", out,
        "--token_cache_dir", dir.file("cache"), "--use_cpu", "--fp16", "--config_overrides",
        "n_layer=2,n_head=4,n_embd=128,n_positions=64,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0", "--block_size", "64",
        "--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "2", "--learning_rate", "2e-3",
        "--weight_decay", "0.1", "--max_grad_norm", "1.0", "--warmup_steps", "3", "--max_steps", "10",
        "--logging_steps", "1", "--save_steps", "8", "--threads", "2", "--seed", "8", "--report_to", "none"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const RunResult full = run_trainer(args(dir.file("full"), {}));
  expect_ok(full);
  REQUIRE_THAT(full.out, Catch::Contains("step 7: fp16 gradients overflowed at loss scale 65536; step skipped, scale halved"));
  const auto lr = metric_series(dir.file("full/metrics.jsonl"), "learning_rate");
  REQUIRE(lr.size() == 10);
  // The step after a skipped one takes the skipped one's rate; every other step moves along the
  // (warmup, then linear decay) schedule.
  for (std::size_t step = 2; step <= lr.size(); ++step) {
    const bool previous_skipped =
        full.out.find("step " + std::to_string(step - 1) + ": fp16 gradients overflowed") != std::string::npos;
    INFO("step " << step);
    CHECK((lr[step - 1] == lr[step - 2]) == previous_skipped);
  }
  // A run resumed after the skip keeps the lag: the same rates and losses as the uninterrupted run.
  expect_ok(run_trainer(args(dir.file("resumed"), {"--resume_from_checkpoint", dir.file("full/checkpoint-8")})));
  const auto resumed_lr = metric_series(dir.file("resumed/metrics.jsonl"), "learning_rate");
  REQUIRE(resumed_lr.size() == 2);
  CHECK(resumed_lr[0] == lr[8]);
  CHECK(resumed_lr[1] == lr[9]);
  const auto losses = metric_series(dir.file("full/metrics.jsonl"), "loss");
  const auto resumed_losses = metric_series(dir.file("resumed/metrics.jsonl"), "loss");
  CHECK(resumed_losses[0] == losses[8]);
  CHECK(resumed_losses[1] == losses[9]);
}

TEST_CASE("a bf16 run resumed from a checkpoint repeats the uninterrupted run exactly", "[train][precision][resume]") {
  ScratchDir dir("precision-run");
  dir.write("corpus.txt", corpus());
  expect_ok(run_trainer(run_args(dir, dir.file("full"), {"--bf16"})));
  const RunResult resumed =
      run_trainer(run_args(dir, dir.file("resumed"), {"--bf16", "--resume_from_checkpoint", dir.file("full/checkpoint-10")}));
  expect_ok(resumed);
  const auto full = metric_series(dir.file("full/metrics.jsonl"), "loss");
  const auto again = metric_series(dir.file("resumed/metrics.jsonl"), "loss");
  REQUIRE(again.size() == 10);
  for (std::size_t i = 0; i < again.size(); ++i) CHECK(again[i] == full[10 + i]);
  CHECK(read_file(dir.file("resumed/model.safetensors")) == read_file(dir.file("full/model.safetensors")));
}

TEST_CASE("bf16 on 2 ranks, with and without optimizer offload, follows 1 rank within 1%", "[train][precision][distributed]") {
  ScratchDir dir("precision-run");
  dir.write("corpus.txt", corpus());
  expect_ok(run_trainer(run_args(dir, dir.file("one"), {"--bf16"})));
  const auto one = metric_series(dir.file("one/metrics.jsonl"), "loss");
  for (const std::string offload : {"none", "optimizer"}) {
    DYNAMIC_SECTION("offload " << offload) {
      const std::string out = dir.file("two-" + offload);
      expect_ok(run_trainer(run_args(dir, out, {"--bf16", "--nproc", "2", "--offload", offload}, 2, 2)));
      expect_close(metric_series(out + "/metrics.jsonl", "loss"), one, 0.01);
      for (const std::string& dtype : safetensors_dtypes(out + "/model.safetensors")) CHECK(dtype == "BF16");
    }
  }
}

TEST_CASE("precision flags the device cannot honour are refused with a clear error", "[train][precision][errors]") {
  ScratchDir dir("precision-run");
  dir.write("corpus.txt", corpus());
  const RunResult tf32 = run_trainer(run_args(dir, dir.file("tf32"), {"--tf32"}));
  CHECK(tf32.exit_code == 1);
  CHECK_THAT(tf32.err, Catch::Contains("trainer: error: --tf32 needs a CUDA GPU (this run trains on the CPU)"));
  const RunResult both = run_trainer(run_args(dir, dir.file("both"), {"--fp16", "--bf16"}));
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Catch::Contains("--fp16 and --bf16 cannot both be on"));
}
