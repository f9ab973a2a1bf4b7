// The real trainer on many ranks through `trainer --nproc N` (a private rdzvd, Gloo on the CPU):
// 2 and 4 ranks give the 1-rank run's losses and gradient norms with the same global batch, with
// and without optimizer offload (one process with offload is a world of one), and log sane
// per-step timings; delayed offload updates lag one step and resume exactly; a killed rank stops
// the run with a clear message; --nproc refuses to run
// inside an existing rendezvous; the private rdzvd finds the libraries the trainer found.
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "llmrdzv/io/json.hpp"
#include "scratch_dir.hpp"
#include "run_checks.hpp"
#include "trainer_process.hpp"

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_ok;
using trainer_test::metric_series;
using trainer_test::run_trainer;
using trainer_test::RunResult;
using trainer_test::TrainerProcess;

namespace {

std::string corpus() {
  return trainer_test::word_corpus({"rank", "world", "gloo", "store", "round", "token", "block", "epoch", "shard"}, 11, 900, 13);
}

std::vector<std::string> run_args(const ScratchDir& dir, const std::string& out, int per_device, int accumulation,
                                  const std::string& offload) {
  return {"--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0",
          "--output_dir", out, "--token_cache_dir", dir.file("cache-" + out.substr(out.size() - 6)),
          "--config_overrides", "n_layer=2,n_head=2,n_embd=32,n_positions=32,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
          "--block_size", "16", "--per_device_train_batch_size", std::to_string(per_device),
          "--gradient_accumulation_steps", std::to_string(accumulation), "--learning_rate", "3e-3",
          "--weight_decay", "0.1", "--max_grad_norm", "0.5", "--warmup_steps", "2", "--max_steps", "20",
          "--logging_steps", "1", "--save_steps", "0", "--threads", "1", "--seed", "3", "--offload", offload};
}

std::vector<double> losses(const std::string& metrics) { return metric_series(metrics, "loss"); }

// Checks the per-step timings of every training record (each has both; the time rank 0 spent
// blocked in collectives is part of its step time) and returns the summed blocked time.
double comm_wait_total(const std::string& metrics) {
  double total = 0;
  std::istringstream lines(read_file(metrics));
  for (std::string line; std::getline(lines, line);) {
    const auto record = llmrdzv::json::parse(line);
    if (!record.find("loss") || !record.find("step")) continue;
    INFO(line);
    REQUIRE(record.find("step_time_s"));
    REQUIRE(record.find("comm_wait_s"));
    const double step_time = record.find("step_time_s")->as_double();
    const double comm_wait = record.find("comm_wait_s")->as_double();
    CHECK(step_time > 0);
    CHECK(comm_wait >= 0);
    CHECK(comm_wait <= step_time);
    total += comm_wait;
  }
  return total;
}

std::vector<int> children_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<int> out;
  for (int child; in >> child;) out.push_back(child);
  return out;
}

std::string command_line(int pid) {
  std::string text = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

}  // namespace

TEST_CASE("2 and 4 ranks give the 1-rank losses with the same global batch (offload none and optimizer)",
          "[train][distributed]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", corpus());
  // --offload optimizer runs with both gradient syncs: all_reduce (the CPU's default) and reduce
  // to the shard owners (the GPU's default).
  for (const std::string variant : {"none", "optimizer", "optimizer-reduce"}) {
    DYNAMIC_SECTION("offload " << variant) {
      const std::string offload = variant == "none" ? "none" : "optimizer";
      const auto run_args = [&](const ScratchDir& d, const std::string& out, int per_device, int accumulation,
                                const std::string& o) {
        auto args = ::run_args(d, out, per_device, accumulation, o);
        args.insert(args.end(), {"--offload_gradient_sync", variant == "optimizer-reduce" ? "reduce" : "all_reduce"});
        return args;
      };
      // One process (with --offload optimizer a world of one through the same launcher).
      const RunResult single = run_trainer(run_args(dir, dir.file("runs-" + variant + "-1rank"), 4, 2, offload));
      expect_ok(single);
      CHECK((offload == "optimizer") == (single.err.find("standalone: 1 rank ") != std::string::npos));
      const auto reference = losses(dir.file("runs-" + variant + "-1rank/metrics.jsonl"));
      REQUIRE(reference.size() == 20);
      CHECK(reference.back() < reference.front() - 1.0);
      const double single_wait = comm_wait_total(dir.file("runs-" + variant + "-1rank/metrics.jsonl"));
      if (offload == "none") CHECK(single_wait == 0);  // one process, no collectives

      for (const int world : {2, 4}) {
        const std::string out = dir.file("runs-" + variant + "-" + std::to_string(world) + "rank");
        auto args = run_args(dir, out, 4 / world, 2, offload);
        args.insert(args.end(), {"--nproc", std::to_string(world)});
        const RunResult run = run_trainer(args);
        expect_ok(run);
        CHECK_THAT(run.err, Catch::Contains("standalone: " + std::to_string(world) + " ranks"));
        const auto got = losses(out + "/metrics.jsonl");
        CHECK(comm_wait_total(out + "/metrics.jsonl") > 0);
        REQUIRE(got.size() == reference.size());
        for (std::size_t step = 0; step < got.size(); ++step) {
          INFO("world " << world << " step " << step + 1 << ": " << got[step] << " vs 1 rank " << reference[step]);
          CHECK(std::abs(got[step] - reference[step]) <= 1e-5 * std::abs(reference[step]));
        }
        // The global gradient too (its norm before clipping): gradients summed instead of
        // averaged over ranks would barely move the clipped AdamW losses, but scale this.
        const auto norms = metric_series(out + "/metrics.jsonl", "grad_norm");
        const auto reference_norms = metric_series(dir.file("runs-" + variant + "-1rank/metrics.jsonl"), "grad_norm");
        REQUIRE(norms.size() == reference_norms.size());
        for (std::size_t step = 0; step < norms.size(); ++step) {
          INFO("world " << world << " step " << step + 1 << ": grad_norm " << norms[step] << " vs 1 rank "
                        << reference_norms[step]);
          CHECK(std::abs(norms[step] - reference_norms[step]) <= 1e-4 * std::abs(reference_norms[step]));
        }
      }
    }
  }
}

TEST_CASE("delayed offload updates: 1 and 2 ranks follow the undelayed run until the delay starts, learn, and "
          "resume exactly", "[train][distributed][offload]") {
  // Two ranks also all-gather the delayed weights.
  for (const std::string nproc : {"1", "2"}) {
    INFO(nproc << " rank(s)");
    ScratchDir dir("train-run");
    dir.write("corpus.txt", corpus());
    const auto ranks = [&](const std::string& out, std::initializer_list<std::string> more) {
      auto args = run_args(dir, dir.file(out), 2, 2, "optimizer");
      args.insert(args.end(), {"--nproc", nproc});
      args.insert(args.end(), more);
      return args;
    };
    expect_ok(run_trainer(ranks("undelay", {})));
    const auto undelayed = losses(dir.file("undelay/metrics.jsonl"));
    // Delayed after 3 steps; a checkpoint at step 10 (which applies the pending update first).
    expect_ok(run_trainer(ranks("delayed", {"--offload_delayed_update", "3", "--save_steps", "10"})));
    const auto delayed = losses(dir.file("delayed/metrics.jsonl"));
    REQUIRE(undelayed.size() == 20);
    REQUIRE(delayed.size() == 20);
    // Step 4 is the first delayed update, so step 5 is the first to run on weights one update old.
    for (std::size_t step = 0; step < 4; ++step) {
      INFO("step " << step + 1);
      CHECK(delayed[step] == undelayed[step]);
    }
    CHECK(delayed[4] != undelayed[4]);
    CHECK(delayed.back() < delayed.front() - 1.0);
    CHECK(std::abs(delayed.back() - undelayed.back()) < 0.1 * undelayed.back());

    const RunResult resumed = run_trainer(ranks("resumed", {"--offload_delayed_update", "3", "--save_steps", "10",
                                                             "--resume_from_checkpoint", dir.file("delayed/checkpoint-10")}));
    expect_ok(resumed);
    const auto again = losses(dir.file("resumed/metrics.jsonl"));
    REQUIRE(again.size() == 10);
    for (std::size_t i = 0; i < again.size(); ++i) {
      INFO("step " << i + 11);
      CHECK(again[i] == delayed[10 + i]);
    }
    CHECK(read_file(dir.file("resumed/model.safetensors")) == read_file(dir.file("delayed/model.safetensors")));
  }
}

TEST_CASE("a killed rank stops the standalone run with a message naming it", "[train][distributed][kill]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", corpus());
  auto args = run_args(dir, dir.file("killed"), 2, 1, "none");
  *(std::find(args.begin(), args.end(), "--max_steps") + 1) = "100000";  // far more than the test waits for
  args.insert(args.end(), {"--nproc", "2"});
  TrainerProcess launcher(args);
  // Wait until the ranks train (metrics.jsonl has a record), then kill rank 1 (ranks start in order).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const std::string metrics = dir.file("killed/metrics.jsonl");
  while (std::chrono::steady_clock::now() < deadline && (!std::filesystem::exists(metrics) ||
                                                          std::filesystem::file_size(metrics) == 0)) {
    REQUIRE(launcher.running());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<int> ranks;
  for (const int child : children_of(launcher.pid())) {
    if (command_line(child).find("--nproc 0") != std::string::npos) ranks.push_back(child);
  }
  REQUIRE(ranks.size() == 2);
  ::kill(ranks[1], SIGKILL);
  const int status = launcher.wait();
  CHECK(status == 128 + SIGKILL);
  CHECK_THAT(launcher.stderr_text(), Catch::Contains("rank 1 was killed by signal Killed; stopping the other 1 rank\n"));
  for (const int rank : ranks) CHECK(::kill(rank, 0) != 0);  // no rank left behind
}

TEST_CASE("trainer --nproc refuses to start inside an existing rendezvous", "[train][distributed][errors]") {
  ScratchDir dir("train-run");
  dir.write("corpus.txt", corpus());
  auto args = run_args(dir, dir.file("nested"), 2, 1, "none");
  args.insert(args.end(), {"--nproc", "2"});
  ::setenv("RDZV_ENDPOINT", "127.0.0.1:1", 1);
  const RunResult run = run_trainer(args);
  ::unsetenv("RDZV_ENDPOINT");
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.err, Catch::Contains("RDZV_ENDPOINT is already set") && Catch::Contains("drop --nproc"));
  const RunResult negative = run_trainer({"--do_train", "--train_file", dir.file("corpus.txt"), "--output_dir",
                                          dir.file("n"), "--nproc", "-1"});
  CHECK(negative.exit_code == 2);
  CHECK_THAT(negative.err, Catch::Contains("--nproc must be between 0 and 1024"));
}

TEST_CASE("trainer --nproc gives its rdzvd the library path it was started with", "[train][distributed]") {
  // On a GPU host whose gRPC lives in a private prefix (LD_LIBRARY_PATH), rdzvd started with the
  // daemon's minimal environment could not load libgrpc++ and every --nproc run failed. A wrapper
  // in rdzvd's place records what it gets, then runs the real daemon.
  ScratchDir dir("train-run");
  dir.write("corpus.txt", corpus());
  const std::string rdzvd = (std::filesystem::path(TRAINER_BINARY).parent_path() / "rdzvd").string();
  dir.write("rdzvd-wrapper", "#!/bin/sh\nprintf '%s|%s' \"${LD_LIBRARY_PATH-unset}\" \"${LLM_RDZV_TEST_OTHER-unset}\" > " +
                                 dir.file("seen") + "\nexec " + rdzvd + " \"$@\"\n");
  std::filesystem::permissions(dir.path() / "rdzvd-wrapper", std::filesystem::perms::owner_all);
  const char* before = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = before ? before : "";
  const std::string library_path = dir.file("private-prefix/lib") + (saved.empty() ? "" : ":" + saved);
  ::setenv("LD_LIBRARY_PATH", library_path.c_str(), 1);
  ::setenv("LLM_RDZV_TEST_OTHER", "not for the daemon", 1);
  ::setenv("LLM_RDZV_RDZVD", dir.file("rdzvd-wrapper").c_str(), 1);
  auto args = run_args(dir, dir.file("libpath"), 2, 1, "none");
  args.insert(args.end(), {"--nproc", "1", "--max_steps", "2"});
  const RunResult run = run_trainer(args);
  ::unsetenv("LLM_RDZV_RDZVD");
  ::unsetenv("LLM_RDZV_TEST_OTHER");
  if (before) ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1); else ::unsetenv("LD_LIBRARY_PATH");
  expect_ok(run);
  CHECK(read_file(dir.file("seen")) == library_path + "|unset");
}
