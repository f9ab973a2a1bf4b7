// Damaged hub caches (llmrdzv/hub/hub_cache.hpp): dangling and damaged refs, commits without a
// snapshot, files recorded as absent on the hub, links to blobs that are gone, revisions that
// climb out of refs/. Each is refused with HubError naming the folder or file and the problem;
// the first folder of a moved name being damaged leaves the second one usable.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "hub_layout.hpp"
#include "llmrdzv/hub/hub_cache.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
namespace hub = llmrdzv::hub;
using llmrdzv::testing::commit_id;
using llmrdzv::testing::feed_damaged;
using llmrdzv::testing::lay_snapshot;
using llmrdzv::testing::mark_absent;
using llmrdzv::testing::repo_dir;
using llmrdzv::testing::ScratchDir;
using llmrdzv::testing::set_ref;

namespace {

const std::vector<hub::RequiredFile> kModelFiles{{"config.json"}, {"model.safetensors", "model.safetensors.index.json"}};

// A model folder as the hub serves one (the files need not be valid for the resolver).
fs::path model_folder(const ScratchDir& scratch) {
  scratch.write("model/config.json", "{\"model_type\": \"gpt2\"}");
  scratch.write("model/model.safetensors", "weights");
  return scratch / "model";
}

hub::Resolved resolve(const fs::path& cache, const std::string& name, const std::string& revision = "main") {
  return hub::resolve(name, revision, {cache, "--cache_dir"}, "--model_name_or_path", kModelFiles);
}

}  // namespace

TEST_CASE("damaged hub caches are refused naming the folder and the problem", "[malformed][hub]") {
  const ScratchDir scratch("malformed-hub");
  const fs::path cache = scratch / "hub";
  const fs::path model = model_folder(scratch);
  lay_snapshot(cache, "org/good", commit_id('1'), model);
  set_ref(cache, "org/good", "main", commit_id('1'));
  REQUIRE(resolve(cache, "org/good").from_cache);

  // A dangling ref: its commit has no snapshot folder.
  set_ref(cache, "org/good", "dangling", commit_id('9'));
  CHECK_THROWS_AS(resolve(cache, "org/good", "dangling"), hub::HubError);
  CHECK_THROWS_WITH(resolve(cache, "org/good", "dangling"),
                    Catch::Contains("refs/dangling names commit " + commit_id('9') + ", which has no snapshot folder") &&
                        Catch::Contains("--revision dangling --cache-dir " + cache.string()));
  // A commit asked for directly that was never downloaded.
  CHECK_THROWS_WITH(resolve(cache, "org/good", commit_id('8')),
                    Catch::Contains("commit " + commit_id('8') + ", which has no snapshot folder"));
  // Refs that hold no commit id: a newline after it, a short id, upper case, nothing.
  for (const std::string& text : {commit_id('1') + "\n", commit_id('1').substr(1), std::string(40, 'A'), std::string()}) {
    set_ref(cache, "org/good", "damaged", text);
    CHECK_THROWS_WITH(resolve(cache, "org/good", "damaged"),
                      Catch::Contains((repo_dir(cache, "org/good") / "refs" / "damaged").string()) &&
                          Catch::Contains("does not hold a 40-hex commit id"));
  }
  // A ref that is a folder is no ref.
  fs::create_directories(repo_dir(cache, "org/good") / "refs" / "folder");
  CHECK_THROWS_WITH(resolve(cache, "org/good", "folder"), Catch::Contains("no refs/folder"));
  // Revisions that climb out of refs/.
  for (const char* revision : {"../../x", "/etc/passwd", "..", "a/../../b", ""}) {
    CHECK_THROWS_WITH(resolve(cache, "org/good", revision), Catch::Contains("is not a branch, tag or commit name"));
  }

  // A snapshot whose config.json link points at a blob that is gone (an interrupted download).
  lay_snapshot(cache, "org/gone", commit_id('2'), model);
  set_ref(cache, "org/gone", "main", commit_id('2'));
  fs::remove(repo_dir(cache, "org/gone") / "blobs" / (commit_id('2').substr(0, 8) + "-config.json"));
  CHECK_THROWS_WITH(resolve(cache, "org/gone"), Catch::Contains("config.json' points to") && Catch::Contains("which is missing"));

  // config.json never downloaded, and config.json the hub says is not there.
  fs::create_directories(repo_dir(cache, "org/partial") / "snapshots" / commit_id('3'));
  set_ref(cache, "org/partial", "main", commit_id('3'));
  CHECK_THROWS_WITH(resolve(cache, "org/partial"), Catch::Contains("has no config.json (not downloaded)"));
  mark_absent(cache, "org/partial", commit_id('3'), "config.json");
  CHECK_THROWS_WITH(resolve(cache, "org/partial"),
                    Catch::Contains("the repository has no config.json at commit " + commit_id('3')));

  // gpt2's first folder is damaged, its moved name's is fine: that one is used, and the log says
  // why the other was not.
  set_ref(cache, "gpt2", "main", commit_id('7'));
  lay_snapshot(cache, "openai-community/gpt2", commit_id('4'), model);
  set_ref(cache, "openai-community/gpt2", "main", commit_id('4'));
  const hub::Resolved moved = resolve(cache, "gpt2");
  CHECK(moved.dir == repo_dir(cache, "openai-community/gpt2") / "snapshots" / commit_id('4'));
  CHECK_THAT(moved.description, Catch::Contains("not used") && Catch::Contains("models--gpt2") &&
                                    Catch::Contains("which has no snapshot folder"));
}

TEST_CASE("damaged refs are refused with HubError or name a snapshot that is there", "[malformed][hub]") {
  const ScratchDir scratch("malformed-hub-refs");
  const fs::path cache = scratch / "hub";
  lay_snapshot(cache, "org/model", commit_id('5'), model_folder(scratch));
  feed_damaged<hub::HubError>("refs/main", {commit_id('5')}, 2000, [&](const std::string& text) {
    set_ref(cache, "org/model", "main", text);
    const hub::Resolved resolved = resolve(cache, "org/model");
    if (!fs::is_regular_file(resolved.dir / "config.json")) throw llmrdzv::testing::Broken("resolved to " + resolved.dir.string());
  });
}
