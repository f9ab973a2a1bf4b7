// Hub names resolved offline (llmrdzv/hub/hub_cache.hpp) against transformers itself: caches laid
// out here as huggingface_hub writes them, under each of the places its environment variables
// choose, and AutoConfig / AutoModelForCausalLM.from_pretrained(name, revision) with
// HF_HUB_OFFLINE=1 (hub_oracle.py) must read the same snapshot folder the trainer resolves.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hub_layout.hpp"
#include "llmrdzv/hub/hub_cache.hpp"
#include "scoped_environment.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
namespace hub = llmrdzv::hub;
using llmrdzv::testing::commit_id;
using llmrdzv::testing::lay_snapshot;
using llmrdzv::testing::mark_absent;
using llmrdzv::testing::ScratchDir;
using llmrdzv::testing::set_ref;

namespace {

// The variables that choose the hub cache, set for one scope (the oracle inherits them) and
// restored after it.
struct CacheEnvironment : llmrdzv::testing::ScopedEnvironment {
  explicit CacheEnvironment(const std::map<std::string, std::string>& values)
      : ScopedEnvironment({"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME"}, values) {}
};

// Tiny GPT-2 folders from transformers, one per width, made once per run: the width tells which
// snapshot a load read.
const fs::path& model_of_width(int n_embd) {
  static const ScratchDir models("hub-models");
  static const bool made = [] {
    const std::string command = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_HUB_ORACLE + " make " +
                                models.file("w8") + " 8 " + models.file("w16") + " 16 " + models.file("w24") + " 24 2>/dev/null";
    return std::system(command.c_str()) == 0;
  }();
  REQUIRE(made);
  static const std::map<int, fs::path> paths{{8, models / "w8"}, {16, models / "w16"}, {24, models / "w24"}};
  return paths.at(n_embd);
}

struct OracleAnswer {
  std::optional<fs::path> dir;  // nullopt: transformers refused the name
  int n_embd = 0;
};

// transformers' resolution of each (name, revision) in the current environment, run in `cwd`.
std::vector<OracleAnswer> ask_transformers(const std::vector<std::pair<std::string, std::string>>& queries,
                                           const fs::path& cwd) {
  const ScratchDir out("hub-oracle");
  std::string command = "cd '" + cwd.string() + "' && " + LLMRDZV_TEST_PYTHON + " " + LLMRDZV_HUB_ORACLE + " resolve";
  for (const auto& [name, revision] : queries) command += " '" + name + "' '" + revision + "'";
  command += " > '" + out.file("answers") + "' 2> '" + out.file("log") + "'";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(out.file("answers"));
  std::vector<OracleAnswer> answers;
  for (std::string line; std::getline(in, line);) {
    OracleAnswer answer;
    if (line != "error") {
      const auto space = line.rfind(" n_embd=");
      REQUIRE(line.starts_with("dir="));
      REQUIRE(space != std::string::npos);
      answer.dir = line.substr(4, space - 4);
      answer.n_embd = std::stoi(line.substr(space + 8));
    }
    answers.push_back(answer);
  }
  REQUIRE(answers.size() == queries.size());
  return answers;
}

const std::vector<hub::RequiredFile> kModelFiles{{"config.json"}, {"model.safetensors", "model.safetensors.index.json"}};

hub::Resolved resolve(const std::string& name, const std::string& revision = "main") {
  return hub::resolve(name, revision, hub::model_cache_dir(""), "--model_name_or_path", kModelFiles);
}

bool same_dir(const fs::path& a, const fs::path& b) { return fs::equivalent(a, b); }

// The working directory for one scope (a local folder named like a hub model wins).
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory() { fs::current_path(old_); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  fs::path old_;
};

}  // namespace

TEST_CASE("hub names resolve to the snapshot transformers loads offline: refs, tags, commits, moved names",
          "[hub][oracle]") {
  const ScratchDir scratch("hub-refs");
  const fs::path cache = scratch / "hub";
  const fs::path decoy = scratch / "home" / "hub";  // $HF_HOME/hub: $HF_HUB_CACHE wins over it
  lay_snapshot(cache, "gpt2", commit_id('1'), model_of_width(8));
  lay_snapshot(cache, "gpt2", commit_id('2'), model_of_width(16));
  set_ref(cache, "gpt2", "main", commit_id('1'));
  set_ref(cache, "gpt2", "v1", commit_id('2'));
  lay_snapshot(cache, "org/tiny", commit_id('3'), model_of_width(24));
  set_ref(cache, "org/tiny", "main", commit_id('3'));
  lay_snapshot(cache, "openai-community/gpt2-medium", commit_id('4'), model_of_width(16));
  set_ref(cache, "openai-community/gpt2-medium", "main", commit_id('4'));
  lay_snapshot(decoy, "gpt2", commit_id('5'), model_of_width(24));
  set_ref(decoy, "gpt2", "main", commit_id('5'));
  // A repository without safetensors weights, as the hub answered a download of them.
  fs::create_directories(cache / "models--org--noweights" / "snapshots" / commit_id('6'));
  fs::copy_file(model_of_width(8) / "config.json", cache / "models--org--noweights" / "snapshots" / commit_id('6') / "config.json");
  set_ref(cache, "org/noweights", "main", commit_id('6'));
  for (const char* file : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                           "pytorch_model.bin.index.json"}) {
    mark_absent(cache, "org/noweights", commit_id('6'), file);
  }

  const CacheEnvironment env({{"HF_HUB_CACHE", cache.string()}, {"HF_HOME", (scratch / "home").string()}});
  const std::vector<std::pair<std::string, std::string>> queries{
      {"gpt2", "main"}, {"gpt2", "v1"}, {"gpt2", commit_id('2')}, {"org/tiny", "main"},
      {"openai-community/gpt2-medium", "main"}, {"org/noweights", "main"}};
  const std::vector<OracleAnswer> answers = ask_transformers(queries, scratch.path());
  for (std::size_t i = 0; i + 1 < queries.size(); ++i) {
    INFO(queries[i].first << " @ " << queries[i].second);
    REQUIRE(answers[i].dir);
    const hub::Resolved ours = resolve(queries[i].first, queries[i].second);
    CHECK(ours.from_cache);
    CHECK(same_dir(ours.dir, *answers[i].dir));
    CHECK_THAT(ours.description, Catch::Contains(ours.dir.string()));
  }
  CHECK(answers[0].n_embd == 8);
  CHECK(answers[1].n_embd == 16);
  CHECK(answers[3].n_embd == 24);
  CHECK_THAT(resolve("gpt2").description, Catch::Contains("revision main = commit " + commit_id('1')));

  // gpt2-medium moved to openai-community/gpt2-medium: downloaded under the new name, the old name
  // finds the same snapshot, and the log says which folder was used.
  const hub::Resolved moved = resolve("gpt2-medium");
  CHECK(same_dir(moved.dir, *answers[4].dir));
  CHECK_THAT(moved.description, Catch::Contains("models--openai-community--gpt2-medium") &&
                                    Catch::Contains("gpt2-medium is now openai-community/gpt2-medium"));

  // Weights the hub does not have at that commit: transformers refuses, and so does the trainer.
  CHECK_FALSE(answers[5].dir);
  CHECK_THROWS_WITH(resolve("org/noweights"),
                    Catch::Contains("the repository has no model.safetensors or model.safetensors.index.json at commit " +
                                    commit_id('6')) &&
                        Catch::Contains(".no_exist"));

  // Not in the cache: one error naming the folders looked in and the download command.
  CHECK_THROWS_WITH(resolve("gpt2-large"),
                    Catch::Contains((cache / "models--gpt2-large").string()) &&
                        Catch::Contains((cache / "models--openai-community--gpt2-large").string()) &&
                        Catch::Contains("$HF_HUB_CACHE") &&
                        Catch::Contains("hf download gpt2-large --include \"*.json\""));
  CHECK_THROWS_WITH(resolve("gpt2", "v9"), Catch::Contains("no refs/v9") && Catch::Contains("--revision v9"));
}

TEST_CASE("the hub cache is where huggingface_hub's variables put it, and a local folder of that name wins",
          "[hub][oracle]") {
  const ScratchDir scratch("hub-env");
  const fs::path user_home = scratch / "user";
  // One cache per place, each with a different gpt2: the load's width tells which was read.
  lay_snapshot(scratch / "hf-home" / "hub", "gpt2", commit_id('a'), model_of_width(8));
  set_ref(scratch / "hf-home" / "hub", "gpt2", "main", commit_id('a'));
  lay_snapshot(scratch / "xdg" / "huggingface" / "hub", "gpt2", commit_id('b'), model_of_width(16));
  set_ref(scratch / "xdg" / "huggingface" / "hub", "gpt2", "main", commit_id('b'));
  lay_snapshot(user_home / ".cache" / "huggingface" / "hub", "gpt2", commit_id('c'), model_of_width(24));
  set_ref(user_home / ".cache" / "huggingface" / "hub", "gpt2", "main", commit_id('c'));
  lay_snapshot(user_home / ".cache" / "huggingface" / "hub", "org/tiny", commit_id('d'), model_of_width(8));
  set_ref(user_home / ".cache" / "huggingface" / "hub", "org/tiny", "main", commit_id('d'));
  ::setenv("LLMRDZV_TEST_HUB_ROOT", scratch.path().c_str(), 1);

  struct Place {
    std::map<std::string, std::string> env;
    int n_embd;
  };
  const Place places[] = {
      // $HF_HOME, written with a variable as users do (huggingface_hub expands it).
      {{{"HF_HOME", "$LLMRDZV_TEST_HUB_ROOT/hf-home"}, {"XDG_CACHE_HOME", (scratch / "xdg").string()},
        {"HOME", user_home.string()}}, 8},
      {{{"XDG_CACHE_HOME", (scratch / "xdg").string()}, {"HOME", user_home.string()}}, 16},
      {{{"HOME", user_home.string()}}, 24},
  };
  for (const Place& place : places) {
    INFO("expected width " << place.n_embd);
    const CacheEnvironment env(place.env);
    const OracleAnswer answer = ask_transformers({{"gpt2", "main"}}, scratch.path()).at(0);
    REQUIRE(answer.dir);
    CHECK(answer.n_embd == place.n_embd);
    CHECK(same_dir(resolve("gpt2").dir, *answer.dir));
  }

  // A folder named gpt2 in the working directory is the model, for transformers and the trainer;
  // org/tiny still comes from ~/.cache/huggingface/hub.
  fs::create_directories(scratch / "work");
  fs::copy(model_of_width(16), scratch / "work" / "gpt2", fs::copy_options::recursive);
  const CacheEnvironment env(std::map<std::string, std::string>{{"HOME", user_home.string()}});
  const std::vector<OracleAnswer> answers = ask_transformers({{"gpt2", "main"}, {"org/tiny", "main"}}, scratch / "work");
  const WorkingDirectory cwd(scratch / "work");
  REQUIRE(answers[0].dir);
  CHECK(answers[0].n_embd == 16);
  const hub::Resolved local = resolve("gpt2");
  CHECK_FALSE(local.from_cache);
  CHECK(local.description.empty());
  CHECK(same_dir(local.dir, scratch / "work" / *answers[0].dir));
  REQUIRE(answers[1].dir);
  CHECK(same_dir(resolve("org/tiny").dir, *answers[1].dir));
  ::unsetenv("LLMRDZV_TEST_HUB_ROOT");
}

TEST_CASE("hub repository names are checked as huggingface_hub checks them", "[hub]") {
  for (const char* name : {"gpt2", "openai-community/gpt2", "a.b_c-d/e.f", "x"}) CHECK(hub::is_repo_id(name));
  for (const char* name : {"", "a/b/c", "a--b", "a..b", "-a", "a-", "a/.b", "org/name.git", "./gpt2", "/abs", "a b"}) {
    INFO(name);
    CHECK_FALSE(hub::is_repo_id(name));
  }
  CHECK(hub::moved_name("gpt2") == "openai-community/gpt2");
  CHECK(hub::moved_name("distilbert/distilgpt2") == "distilgpt2");
  CHECK(hub::moved_name("facebook/opt-125m").empty());
  const CacheEnvironment env(std::map<std::string, std::string>{{"HOME", "/nonexistent-home"}});
  CHECK(hub::model_cache_dir("").path == "/nonexistent-home/.cache/huggingface/hub");
  CHECK(hub::model_cache_dir("/explicit").origin == "--cache_dir");
  CHECK_THROWS_WITH(resolve("no such/path"), Catch::Contains("nor a hub model name"));
}
