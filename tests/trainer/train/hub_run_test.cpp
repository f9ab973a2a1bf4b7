// The real trainer given hub names: a model laid into a hub cache as huggingface_hub writes one
// trains and evaluates as its own folder does (the same eval loss), `trainer generate --model
// NAME` samples the same text, the run log's first line names the snapshot, and a name the cache
// lacks fails at once naming the folders looked in and the download command.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hub_layout.hpp"
#include "llmrdzv/io/json.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"
#include "trainer_process.hpp"

using llmrdzv::testing::commit_id;
using llmrdzv::testing::lay_snapshot;
using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using llmrdzv::testing::set_ref;
using trainer_test::expect_ok;
using trainer_test::run_trainer;
using trainer_test::RunResult;
namespace fs = std::filesystem;

namespace {

// HF_HOME for one scope (the trainer inherits it); the variables that would take precedence unset.
class HfHome {
 public:
  explicit HfHome(const fs::path& home) {
    for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"}) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      ::unsetenv(name);
    }
    ::setenv("HF_HOME", home.c_str(), 1);
  }
  ~HfHome() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  HfHome(const HfHome&) = delete;
  HfHome& operator=(const HfHome&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

double eval_loss(const std::string& out) {
  return llmrdzv::json::parse(read_file(fs::path(out) / "eval_results.json")).find("eval_loss")->as_double();
}

std::vector<std::string> eval_args(const ScratchDir& dir, const std::string& out, const std::string& model) {
  return {"--do_eval", "--validation_file", dir.file("valid.txt"), "--output_dir", out, "--model_name_or_path", model,
          "--block_size", "16", "--threads", "1", "--report_to", "none"};
}

}  // namespace

TEST_CASE("hub names train, evaluate and generate from the hub cache, offline", "[hub][run]") {
  const ScratchDir dir("hub-run");
  dir.write("train.txt", trainer_test::word_corpus({"alpha", "beta", "gamma", "delta"}, 3, 200, 6));
  dir.write("valid.txt", trainer_test::word_corpus({"alpha", "beta", "gamma", "delta"}, 5, 200, 6));
  // A small trained model, laid into $HF_HOME/hub as openai-community/gpt2 (where `hf download
  // openai-community/gpt2` puts it) and, at another commit, as org/tiny.
  expect_ok(run_trainer({"--do_train", "--train_file", dir.file("train.txt"), "--output_dir", dir.file("base"),
                         "--config_overrides", "n_layer=1,n_head=2,n_embd=16,n_positions=32", "--block_size", "16",
                         "--max_steps", "3", "--threads", "1", "--report_to", "none", "--save_strategy", "no"}));
  const fs::path cache = dir / "hf" / "hub";
  lay_snapshot(cache, "openai-community/gpt2", commit_id('c'), dir / "base");
  set_ref(cache, "openai-community/gpt2", "main", commit_id('c'));
  lay_snapshot(cache, "org/tiny", commit_id('d'), dir / "base");
  set_ref(cache, "org/tiny", "main", commit_id('d'));
  const HfHome home(dir / "hf");

  expect_ok(run_trainer(eval_args(dir, dir.file("local"), dir.file("base"))));
  const RunResult hub_run = run_trainer(eval_args(dir, dir.file("hub"), "gpt2"));
  expect_ok(hub_run);
  const std::string snapshot = (cache / "models--openai-community--gpt2" / "snapshots" / commit_id('c')).string();
  INFO(hub_run.out);
  CHECK(hub_run.out.starts_with("--model_name_or_path gpt2: hub cache '" + (cache / "models--openai-community--gpt2").string() +
                                "' (gpt2 is now openai-community/gpt2 on the hub, and was downloaded under that name), "
                                "revision main = commit " + commit_id('c') + ", snapshot '" + snapshot + "'"));
  CHECK(eval_loss(dir.file("hub")) == eval_loss(dir.file("local")));

  // --cache_dir is the hub cache, as in run_clm.py; the run log says where the token cache went.
  const HfHome elsewhere(dir / "nowhere");
  std::vector<std::string> args = eval_args(dir, dir.file("hub2"), "org/tiny");
  args.insert(args.end(), {"--cache_dir", cache.string(), "--revision", commit_id('d')});
  const RunResult pinned = run_trainer(args);
  expect_ok(pinned);
  CHECK_THAT(pinned.out, Catch::Contains("revision " + commit_id('d') + ", snapshot") &&
                             Catch::Contains("--cache_dir " + cache.string() + " is the Hugging Face hub cache"));
  CHECK(eval_loss(dir.file("hub2")) == eval_loss(dir.file("local")));

  // generate --model NAME samples what the folder itself gives.
  const std::vector<std::string> sample = {"--prompt", "alpha beta", "--max_new_tokens", "12", "--temperature", "0",
                                           "--use_cpu", "--threads", "1"};
  std::vector<std::string> from_folder = {"generate", "--model", dir.file("base")};
  std::vector<std::string> from_hub = {"generate", "--model", "org/tiny", "--cache_dir", cache.string()};
  from_folder.insert(from_folder.end(), sample.begin(), sample.end());
  from_hub.insert(from_hub.end(), sample.begin(), sample.end());
  const RunResult folder_text = run_trainer(from_folder);
  const RunResult hub_text = run_trainer(from_hub);
  expect_ok(folder_text);
  expect_ok(hub_text);
  CHECK(hub_text.out == folder_text.out);
  CHECK_THAT(hub_text.err, Catch::Contains("--model org/tiny: hub cache"));

  // Not in the cache: refused before anything is read, naming the folders and the command.
  const RunResult missing = run_trainer(eval_args(dir, dir.file("missing"), "org/absent"));
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains((dir / "nowhere" / "hub" / "models--org--absent").string()) &&
                              Catch::Contains("hf download org/absent"));
}
