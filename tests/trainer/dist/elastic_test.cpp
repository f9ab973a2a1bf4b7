// In-process elastic restart with the real trainer binary and a real rdzvd: 3 ranks in an elastic
// rendezvous (LLM_RDZV_MIN_WORLD=2, LLM_RDZV_MAX_WORLD=3); one rank is SIGKILLed mid-run. The
// survivors learn it from rdzvd, re-execute themselves, form round 2 as a world of 2 after the
// last call, resume from the newest complete checkpoint (the sampler at the exact block offset,
// the optimizer from rank 0 or, with --offload optimizer or --shard_parameters, the 3 shards
// resharded into 2) and finish max_steps. Their losses after the resume and the final model equal
// those of `trainer --nproc 2` resumed from a copy of the same checkpoint (and, with sharded
// state, one rank resumed from it within 1e-5: the shards concatenated instead of resharded). And
// the limits: LLM_RDZV_MAX_RESTARTS=0 ends the survivors with exit code 3; a survivor left below
// the minimum gives up re-joining with exit code 3 and a message saying so.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "llmrdzv/io/json.hpp"
#include "rdzvd_process.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

constexpr auto kRunTimeout = std::chrono::seconds(240);

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string corpus() {
  return trainer_test::word_corpus({"rank", "world", "gloo", "store", "round", "token", "block", "epoch", "shard",
                                    "restart", "elastic", "resume"},
                                   17, 2400, 11);
}

struct Step {
  std::int64_t step = 0;
  double loss = 0;
};

// The training records of metrics.jsonl in file order (a restarted run appends to it).
std::vector<Step> loss_records(const fs::path& metrics) {
  std::vector<Step> out;
  std::istringstream lines(read_file(metrics));
  for (std::string line; std::getline(lines, line);) {
    const auto record = llmrdzv::json::parse(line);
    const auto* loss = record.find("loss");
    const auto* step = record.find("step");
    if (loss && step) out.push_back({step->as_integer(), loss->as_double()});
  }
  return out;
}

std::int64_t last_step(const fs::path& metrics) {
  if (!fs::exists(metrics)) return 0;
  std::int64_t last = 0;
  try {
    for (const Step& s : loss_records(metrics)) last = s.step;
  } catch (const std::exception&) {  // a line being written
  }
  return last;
}

struct Setup {
  ScratchDir dir;
  std::string offload = "none";
  bool shard_parameters = false;  // ZeRO-3
  int max_steps = 30;
  int save_steps = 5;

  Setup() { dir.write("corpus.txt", corpus()); }

  std::vector<std::string> args(const std::string& out) const {
    std::vector<std::string> all{TRAINER_BINARY, "--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0",
            "--output_dir", dir.file(out), "--token_cache_dir", dir.file("cache"),
            "--config_overrides", "n_layer=2,n_head=2,n_embd=64,n_positions=64,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
            "--block_size", "64", "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "2",
            "--learning_rate", "3e-3", "--weight_decay", "0.1", "--max_grad_norm", "0.5", "--warmup_steps", "2",
            "--max_steps", std::to_string(max_steps), "--logging_steps", "1", "--save_steps", std::to_string(save_steps), "--threads", "1",
            "--seed", "5", "--offload", offload};
    if (shard_parameters) all.insert(all.end(), {"--shard_parameters", "true"});
    return all;
  }
};

// Three ranks of one elastic rendezvous (2..3 participants) on a private rdzvd.
struct ElasticRun {
  ElasticRun(const Setup& setup, const std::map<std::string, std::optional<std::string>>& extra_env)
      : rdzvd(setup.dir, RdzvdConfig{.rdzv_id = "elastic.0", .extra_args = {"--last-call", "1000"}}) {
    for (int r = 0; r < 3; ++r) {
      auto env = rdzvd.client_env(3);
      env["LLM_RDZV_MIN_WORLD"] = "2";
      env["LLM_RDZV_MAX_WORLD"] = "3";
      env["RANK"] = std::to_string(r);
      env["OMP_NUM_THREADS"] = "1";
      env["LLM_RDZV_RESTART_COUNT"] = std::nullopt;
      env["LLM_RDZV_RESTART_REASON"] = std::nullopt;
      env["LLM_RDZV_MAX_RESTARTS"] = std::nullopt;
      for (const auto& [name, value] : extra_env) env[name] = value;
      ranks.push_back(std::make_unique<ChildProcess>(setup.args("out"), env,
                                                     setup.dir.file("rank" + std::to_string(r) + ".err")));
    }
  }

  // Waits until metrics.jsonl shows step `step` (rank 0 writes it), then SIGKILLs `victims`.
  void kill_after(const fs::path& metrics, std::int64_t step, const std::vector<int>& victims) {
    const auto deadline = std::chrono::steady_clock::now() + kRunTimeout;
    while (last_step(metrics) < step) {
      for (int r = 0; r < 3; ++r) {
        if (ranks[r]->wait(std::chrono::milliseconds(0)).has_value()) {
          FAIL("rank " << r << " ended before step " << step << ":\n" << all_stderr());
        }
      }
      if (std::chrono::steady_clock::now() > deadline) FAIL("no step " << step << " in time:\n" << all_stderr());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int victim : victims) ranks[victim]->send_signal(SIGKILL);
    killed_at_step = last_step(metrics);
  }

  std::vector<int> wait_all() {
    std::vector<int> codes;
    for (auto& rank : ranks) {
      for (std::string& line : rank->read_remaining_lines(kRunTimeout)) stdout_lines.push_back(std::move(line));
      codes.push_back(rank->wait(std::chrono::seconds(30)).value_or(-1));
    }
    return codes;
  }

  std::string all_stderr() const {
    std::string text;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      text += "--- rank " + std::to_string(r) + " stderr:\n" + ranks[r]->stderr_text();
    }
    return text + "--- rdzvd:\n" + rdzvd.log();
  }

  RdzvdProcess rdzvd;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  std::vector<std::string> stdout_lines;  // every rank's, once wait_all() has run
  std::int64_t killed_at_step = 0;
};

void copy_checkpoint(const fs::path& from_out, const fs::path& to_out, const std::string& name) {
  fs::create_directories(to_out);
  fs::copy(from_out / name, to_out / name, fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(from_out)) {
    const std::string rank_dir = entry.path().filename().string();
    if (!rank_dir.starts_with("rank-") || !fs::exists(entry.path() / name)) continue;
    fs::create_directories(to_out / rank_dir);
    fs::copy(entry.path() / name, to_out / rank_dir / name, fs::copy_options::recursive);
  }
}

// The whole scenario for one --offload setting and victim.
void kill_one_of_three_and_compare(const std::string& offload, int victim, bool shard_parameters = false) {
  Setup setup;
  setup.offload = offload;
  setup.shard_parameters = shard_parameters;
  const fs::path out = setup.dir.path() / "out";
  const auto started = std::chrono::steady_clock::now();
  ElasticRun run(setup, {});
  run.kill_after(out / "metrics.jsonl", 8, {victim});  // checkpoint-5 is written; checkpoint-10 may be
  const std::vector<int> codes = run.wait_all();
  const double elastic_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string log = run.all_stderr();
  INFO(log);
  for (int r = 0; r < 3; ++r) CHECK(codes[r] == (r == victim ? 128 + SIGKILL : 0));

  // One line per survivor, naming itself, the failed rank, the round and the checkpoint.
  std::vector<std::string> checkpoints;
  for (int r = 0; r < 3; ++r) {
    if (r == victim) continue;
    const std::string err = run.ranks[r]->stderr_text();
    const std::regex restarted("trainer: rank " + std::to_string(r) + ": rank " + std::to_string(victim) +
                               R"( failed in round 1; re-joining the rendezvous, resuming from checkpoint-(\d+) \(restart 1 of 3\))");
    std::smatch match;
    REQUIRE(std::regex_search(err, match, restarted));
    checkpoints.push_back(match[1]);
    CHECK_THAT(err, Contains("re-joined rendezvous 'elastic.0' in round 2 as rank") && Contains(" of 2 (restart 1 of 3)"));
  }
  // The survivors may have looked a moment apart; they resume from the checkpoint the new rank 0
  // picks, and it says so (metrics.jsonl is cut back to that step: the resumed run logs the steps
  // after it again).
  const std::regex cut(R"(^resuming from .*checkpoint-\d+ at step (\d+)$)");
  std::int64_t resume_step = -1;
  for (const std::string& line : run.stdout_lines) {
    std::smatch match;
    if (std::regex_search(line, match, cut)) resume_step = std::stoll(match[1]);
  }
  INFO("killed at step " << run.killed_at_step << ", survivors named checkpoint-" << checkpoints[0] << " and checkpoint-"
                         << checkpoints[1] << ", resumed at step " << resume_step);
  REQUIRE(resume_step >= 5);
  CHECK(resume_step % 5 == 0);
  CHECK((std::to_string(resume_step) == checkpoints[0] || std::to_string(resume_step) == checkpoints[1]));
  // Every step once, 1 .. max_steps; the losses after the resume are the restarted run's.
  const std::vector<Step> records = loss_records(out / "metrics.jsonl");
  std::vector<double> after;
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].step == std::int64_t(i) + 1);
    if (records[i].step > resume_step) after.push_back(records[i].loss);
  }
  REQUIRE(records.back().step == setup.max_steps);
  CHECK(fs::exists(out / "model.safetensors"));
  CHECK(fs::exists(out / "config.json"));

  // The reference: 2 ranks of a fixed world resumed from a copy of the same checkpoint (written
  // by 3 ranks), through `trainer --nproc 2` and its own rdzvd.
  const std::string name = "checkpoint-" + std::to_string(resume_step);
  copy_checkpoint(out, setup.dir.path() / "ref", name);
  std::vector<std::string> ref_args = setup.args("ref");
  ref_args.insert(ref_args.end(), {"--resume_from_checkpoint", (setup.dir.path() / "ref" / name).string(),
                                   "--nproc", "2"});
  const auto ref_started = std::chrono::steady_clock::now();
  ChildProcess reference(ref_args,
                         {{"RDZV_ENDPOINT", std::nullopt}, {"OMP_NUM_THREADS", "1"}, {"LLM_RDZV_MIN_WORLD", std::nullopt},
                          {"LLM_RDZV_MAX_WORLD", std::nullopt}, {"RANK", std::nullopt}, {"WORLD_SIZE", std::nullopt}},
                         setup.dir.file("reference.err"));
  reference.read_remaining_lines(kRunTimeout);
  const auto ref_code = reference.wait(std::chrono::seconds(30));
  const double ref_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ref_started).count();
  INFO("reference stderr:\n" << reference.stderr_text());
  REQUIRE(ref_code == 0);
  std::vector<double> expected;
  for (const Step& s : loss_records(setup.dir.path() / "ref" / "metrics.jsonl")) expected.push_back(s.loss);
  REQUIRE(after.size() == expected.size());
  REQUIRE(expected.size() == std::size_t(setup.max_steps - resume_step));
  for (std::size_t i = 0; i < after.size(); ++i) {
    INFO("step " << resume_step + std::int64_t(i) + 1 << ": elastic " << after[i] << ", reference " << expected[i]);
    CHECK(after[i] == expected[i]);  // the same world of 2 from the same checkpoint: bit for bit
  }
  CHECK(read_file(out / "model.safetensors") == read_file(setup.dir.path() / "ref" / "model.safetensors"));

  if (offload == "optimizer" || shard_parameters) {
    // An independent check of the resharding: one process (a world of one, the 3 shards simply
    // concatenated; under ZeRO-3 one rank of --nproc 1) with the same global batch of 8 trains
    // like the 2 survivors, within float rounding of the other micro-batch size.
    copy_checkpoint(out, setup.dir.path() / "one", name);
    std::vector<std::string> one_args = setup.args("one");
    one_args.insert(one_args.end(), {"--resume_from_checkpoint", (setup.dir.path() / "one" / name).string(),
                                     "--per_device_train_batch_size", "4"});
    if (shard_parameters) one_args.insert(one_args.end(), {"--nproc", "1"});
    ChildProcess one(one_args, {{"RDZV_ENDPOINT", std::nullopt}, {"OMP_NUM_THREADS", "1"}}, setup.dir.file("one.err"));
    one.read_remaining_lines(kRunTimeout);
    const auto one_code = one.wait(std::chrono::seconds(30));
    INFO("one-process stderr:\n" << one.stderr_text());
    REQUIRE(one_code == 0);
    std::vector<double> single;
    for (const Step& s : loss_records(setup.dir.path() / "one" / "metrics.jsonl")) single.push_back(s.loss);
    REQUIRE(single.size() == after.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      INFO("step " << resume_step + std::int64_t(i) + 1 << ": 2 ranks " << after[i] << ", 1 process " << single[i]);
      CHECK(std::fabs(after[i] - single[i]) <= 1e-5 * std::fabs(single[i]));
    }
  }
  WARN("offload " << offload << (shard_parameters ? ", ZeRO-3" : "") << ": elastic run (kill at step " << run.killed_at_step << ", resume from " << name
                  << ") took " << elastic_seconds << " s; the world-2 reference " << ref_seconds << " s");
}

}  // namespace

TEST_CASE("elastic: survivors of a killed rank resume from the last checkpoint at world 2 like a world-2 resume") {
  kill_one_of_three_and_compare("none", 2);
}

TEST_CASE("elastic: offload optimizer shards of 3 ranks are resharded for the 2 survivors of a killed rank 0") {
  kill_one_of_three_and_compare("optimizer", 0);
}

TEST_CASE("elastic: ZeRO-3 (--shard_parameters) optimizer shards of 3 ranks are resharded for the 2 survivors of a killed rank 1") {
  kill_one_of_three_and_compare("none", 1, true);
}

TEST_CASE("elastic: with LLM_RDZV_MAX_RESTARTS=0 the survivors stop with exit code 3") {
  Setup setup;
  setup.save_steps = 0;  // a checkpoint only at the end: rank 0 warns that a restart would start over
  ElasticRun run(setup, {{"LLM_RDZV_MAX_RESTARTS", "0"}});
  run.kill_after(setup.dir.path() / "out" / "metrics.jsonl", 2, {2});
  const std::vector<int> codes = run.wait_all();
  INFO(run.all_stderr());
  CHECK(codes == std::vector<int>{3, 3, 128 + SIGKILL});
  for (int r = 0; r < 2; ++r) {
    CHECK_THAT(run.ranks[r]->stderr_text(),
               Contains("trainer: error: rank " + std::to_string(r) + " stops: rank 2 failed in round 1") &&
                   Contains("no restarts left (this rank restarted 0 times, LLM_RDZV_MAX_RESTARTS=0)"));
  }
  const std::string warning = "trainer: warning: the rendezvous is elastic, but --save_steps 0 writes a checkpoint "
                              "only at the end: a restart after a rank fails will start training over from step 0";
  CHECK_THAT(run.ranks[0]->stderr_text(), Contains(warning));
  CHECK_THAT(run.ranks[1]->stderr_text(), !Contains("rendezvous is elastic, but"));  // said once, by rank 0
}

TEST_CASE("elastic: a survivor below the minimum gives up re-joining with exit code 3") {
  Setup setup;
  ElasticRun run(setup, {{"LLM_RDZV_TIMEOUT", "4"}});
  run.kill_after(setup.dir.path() / "out" / "metrics.jsonl", 2, {1, 2});
  const auto killed = std::chrono::steady_clock::now();
  const std::vector<int> codes = run.wait_all();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const std::string err = run.ranks[0]->stderr_text();
  INFO(run.all_stderr());
  CHECK(codes == std::vector<int>{3, 128 + SIGKILL, 128 + SIGKILL});
  CHECK_THAT(err, Contains("trainer: rank 0: rank ") && Contains("failed in round 1; re-joining the rendezvous"));
  CHECK_THAT(err, Contains("trainer: error: could not re-join rendezvous 'elastic.0' after rank ") &&
                      Contains("(restart 1 of 3): the next round did not form within 4 s (LLM_RDZV_TIMEOUT): fewer "
                               "than the minimum of 2 ranks came back"));
  CHECK(seconds < 30);
}

TEST_CASE("elastic: survivors of a failure before the first checkpoint start over and finish") {
  Setup setup;
  setup.save_steps = 25;
  const fs::path out = setup.dir.path() / "out";
  ElasticRun run(setup, {});
  run.kill_after(out / "metrics.jsonl", 2, {1});
  const std::vector<int> codes = run.wait_all();
  INFO(run.all_stderr() << "\nkilled at step " << run.killed_at_step);
  REQUIRE(run.killed_at_step < setup.save_steps);
  CHECK(codes == std::vector<int>{0, 128 + SIGKILL, 0});
  CHECK_THAT(run.ranks[0]->stderr_text(), !Contains("rendezvous is elastic, but"));  // it does save, at step 25
  for (int r : {0, 2}) {
    CHECK_THAT(run.ranks[r]->stderr_text(),
               Contains("trainer: rank " + std::to_string(r) +
                        ": rank 1 failed in round 1; re-joining the rendezvous, starting over (no checkpoint yet) "
                        "(restart 1 of 3)"));
  }
  // The restarted run replaced what the failed attempt wrote: one clean run of all the steps.
  std::vector<std::int64_t> steps;
  for (const Step& s : loss_records(out / "metrics.jsonl")) steps.push_back(s.step);
  std::vector<std::int64_t> expected(setup.max_steps);
  for (int i = 0; i < setup.max_steps; ++i) expected[i] = i + 1;
  CHECK(steps == expected);
  CHECK(fs::exists(out / "model.safetensors"));
}
