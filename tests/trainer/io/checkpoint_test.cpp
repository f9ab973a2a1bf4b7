// Training checkpoints: round trip, keep-last-K rotation, replacement of the same step, and
// detection of every kind of damage (corrupt, truncated, missing or extra files, no manifest,
// a save killed midway) so that a bad checkpoint is never loaded silently.
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "llmrdzv/io/checkpoint.hpp"
#include "llmrdzv/io/sha256.hpp"
#include "scratch_dir.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;
namespace fs = std::filesystem;
using testing::flip_byte;

namespace {

io::CheckpointData sample(std::int64_t seed) {
  io::CheckpointData data;
  data.tensor_files["model.safetensors"] = {{"w", at::arange(12, at::kFloat).reshape({3, 4}).mul(static_cast<double>(seed))},
                                            {"ids", at::arange(5, at::kLong)}};
  data.tensor_files["optimizer.safetensors"] = {{"exp_avg.w", at::arange(12, at::kFloat).reshape({3, 4}).mul(-0.5 * static_cast<double>(seed))}};
  data.blobs["trainer_state.json"] = R"({"global_step": )" + std::to_string(seed) + "}";
  data.blobs["rng.bin"] = std::string("\0\1\2\xff", 4);
  data.metadata["global_step"] = std::to_string(seed);
  return data;
}

void check_equal(const io::CheckpointData& a, const io::CheckpointData& b) {
  REQUIRE(a.tensor_files.size() == b.tensor_files.size());
  for (const auto& [file, tensors] : a.tensor_files) {
    const io::NamedTensors& other = b.tensor_files.at(file);
    REQUIRE(tensors.size() == other.size());
    for (const auto& [name, t] : tensors) {
      auto it = std::find_if(other.begin(), other.end(), [&](const auto& p) { return p.first == name; });
      REQUIRE(it != other.end());
      CHECK(at::equal(t, it->second));
    }
  }
  CHECK(a.blobs == b.blobs);
  CHECK(a.metadata == b.metadata);
}


}  // namespace

TEST_CASE("checkpoint round trip, copied and memory-mapped", "[checkpoint]") {
  testing::ScratchDir root;
  const io::CheckpointData data = sample(3);
  const fs::path dir = io::save_checkpoint(root.path(), 3, data);
  CHECK(dir == root / "checkpoint-3");
  CHECK(fs::exists(dir / io::kManifestName));
  io::verify_checkpoint(dir);
  check_equal(data, io::load_checkpoint(dir, /*alias=*/false));
  check_equal(data, io::load_checkpoint(dir, /*alias=*/true));
  // Nothing but the checkpoint is left in the root (no staging directories).
  CHECK(std::distance(fs::directory_iterator(root.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("checkpoint rotation keeps the last K and a re-save replaces its step", "[checkpoint]") {
  testing::ScratchDir root;
  for (std::int64_t step = 1; step <= 5; ++step) io::save_checkpoint(root.path(), step * 10, sample(step), /*keep_last=*/2);
  const auto all = io::list_checkpoints(root.path());
  REQUIRE(all.size() == 2);
  CHECK(all[0].step == 40);
  CHECK(all[1].step == 50);

  io::save_checkpoint(root.path(), 50, sample(7), 2);
  check_equal(sample(7), io::load_checkpoint(root / "checkpoint-50"));
  CHECK(io::list_checkpoints(root.path()).size() == 2);
  CHECK(std::distance(fs::directory_iterator(root.path()), fs::directory_iterator()) == 2);
}

TEST_CASE("rotation after resuming from an earlier checkpoint keeps the new run's, not the abandoned run's later ones",
          "[checkpoint]") {
  // A run saved at 10..50; it is resumed from checkpoint-20 and saves 30 again, then 40.
  testing::ScratchDir root;
  for (std::int64_t step = 1; step <= 5; ++step) io::save_checkpoint(root.path(), step * 10, sample(step));
  io::save_checkpoint(root.path(), 30, sample(8), /*keep_last=*/1);
  std::vector<io::CheckpointInfo> all = io::list_checkpoints(root.path());
  REQUIRE(all.size() == 1);
  CHECK(all[0].step == 30);
  check_equal(sample(8), io::load_checkpoint(root / "checkpoint-30"));

  for (std::int64_t step = 1; step <= 5; ++step) io::save_checkpoint(root.path(), step * 10, sample(step));
  io::save_checkpoint(root.path(), 20, sample(9));
  io::prune_checkpoints(root.path(), 2, /*protected_step=*/20);  // keeps 20 and 10: 30..50 are abandoned
  all = io::list_checkpoints(root.path());
  REQUIRE(all.size() == 2);
  CHECK(all[0].step == 10);
  CHECK(all[1].step == 20);
}

TEST_CASE("checkpoint damage is detected and never loaded", "[checkpoint]") {
  testing::ScratchDir root;
  io::save_checkpoint(root.path(), 1, sample(1));
  const fs::path older = root / "checkpoint-1";

  auto damaged = [&](std::int64_t step) {
    io::save_checkpoint(root.path(), step, sample(step));
    return root / ("checkpoint-" + std::to_string(step));
  };

  SECTION("flipped byte") {
    const fs::path dir = damaged(2);
    flip_byte(dir / "model.safetensors", static_cast<std::streamoff>(fs::file_size(dir / "model.safetensors") - 3));
    CHECK_THROWS_WITH(io::load_checkpoint(dir), dir.string() + ": file model.safetensors fails its SHA-256 check (corrupt)");
  }
  SECTION("truncated file") {
    const fs::path dir = damaged(2);
    fs::resize_file(dir / "optimizer.safetensors", 10);
    CHECK_THROWS_WITH(io::verify_checkpoint(dir), Catch::Contains("file optimizer.safetensors has 10 bytes, the manifest says"));
  }
  SECTION("missing file") {
    const fs::path dir = damaged(2);
    fs::remove(dir / "rng.bin");
    CHECK_THROWS_WITH(io::verify_checkpoint(dir), dir.string() + ": file rng.bin is missing");
  }
  SECTION("extra file") {
    const fs::path dir = damaged(2);
    std::ofstream(dir / "stray.txt") << "x";
    CHECK_THROWS_WITH(io::verify_checkpoint(dir), dir.string() + ": file stray.txt is not in the manifest");
  }
  SECTION("no manifest") {
    const fs::path dir = damaged(2);
    fs::remove(dir / io::kManifestName);
    CHECK_THROWS_WITH(io::load_checkpoint(dir), dir.string() + ": no MANIFEST.json (incomplete or not a checkpoint)");
  }
  SECTION("malformed manifest") {
    const fs::path dir = damaged(2);
    std::ofstream(dir / io::kManifestName, std::ios::trunc) << R"({"format": "llm-rdzv-checkpoint", "version": 1, "files": 3})";
    CHECK_THROWS_WITH(io::verify_checkpoint(dir), Catch::Contains("malformed manifest: expected an object, got number"));
  }
  SECTION("a manifest naming a file outside the checkpoint, with its true size and SHA-256") {
    const fs::path dir = damaged(2);
    const std::string outside = R"({"kind": "blob", "size": 1, "sha256": ")" + io::Sha256().update(std::string_view("x")).hex_digest() + "\"}";
    std::ofstream(root / "outside.bin") << "x";
    std::string manifest = testing::read_file(dir / io::kManifestName);
    manifest.replace(manifest.find("\"files\": {") + 10, 0, "\"../outside.bin\": " + outside + ", ");
    std::ofstream(dir / io::kManifestName, std::ios::trunc) << manifest;
    CHECK_THROWS_WITH(io::verify_checkpoint(dir), Catch::Contains("manifest: invalid checkpoint file name \"../outside.bin\""));
    fs::remove(root / "outside.bin");
  }
  SECTION("a manifest naming a file longer than a file name can be") {
    const fs::path dir = damaged(2);
    std::string manifest = testing::read_file(dir / io::kManifestName);
    manifest.replace(manifest.find("rng.bin"), 7, std::string(300, 'r'));
    std::ofstream(dir / io::kManifestName, std::ios::trunc) << manifest;
    CHECK_THROWS_WITH(io::verify_checkpoint(dir), Catch::Contains("manifest: invalid checkpoint file name"));
  }
  SECTION("renamed to another step") {
    const fs::path dir = damaged(2);
    fs::rename(dir, root / "checkpoint-9");
    CHECK_THROWS_WITH(io::verify_checkpoint(root / "checkpoint-9"), Catch::Contains("manifest is for step 2"));
  }
  std::vector<std::string> rejected;
  const auto latest = io::latest_valid_checkpoint(root.path(), &rejected);
  REQUIRE(latest);
  CHECK(latest->dir == older);
  REQUIRE(rejected.size() == 1);
  check_equal(sample(1), io::load_checkpoint(older));
}

TEST_CASE("a failed save leaves the previous checkpoint and no partial one", "[checkpoint]") {
  testing::ScratchDir root;
  io::save_checkpoint(root.path(), 1, sample(1));
  io::CheckpointData bad = sample(2);
  bad.tensor_files["z.safetensors"] = {{"complex", at::randn({2}, at::kComplexFloat)}};
  CHECK_THROWS_WITH(io::save_checkpoint(root.path(), 2, bad), Catch::Contains("safetensors cannot store tensors of type ComplexFloat"));
  CHECK(io::list_checkpoints(root.path()).size() == 1);
  CHECK(std::distance(fs::directory_iterator(root.path()), fs::directory_iterator()) == 1);
  CHECK(io::latest_valid_checkpoint(root.path())->step == 1);
}

TEST_CASE("a save killed midway leaves the previous checkpoint loadable", "[checkpoint]") {
  testing::ScratchDir root;
  io::save_checkpoint(root.path(), 1, sample(1));
  io::CheckpointData big = sample(2);
  big.tensor_files["optimizer.safetensors"] = {{"state", at::randn({64, 1024, 1024})}};  // 256 MiB
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    io::save_checkpoint(root.path(), 2, big);
    ::_exit(0);
  }
  // Kill the writer as soon as its staging directory holds a file.
  bool staged = false;
  for (int i = 0; i < 2000 && !staged; ++i) {
    for (const auto& e : fs::directory_iterator(root.path())) {
      if (e.path().filename().string().starts_with(".checkpoint-tmp-") && !fs::is_empty(e.path())) staged = true;
    }
    if (!staged) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(staged);
  if (fs::exists(root / "checkpoint-2")) {
    WARN("the writer finished before it was killed; checking that its checkpoint is complete instead");
    io::verify_checkpoint(root / "checkpoint-2");
  } else {
    const auto latest = io::latest_valid_checkpoint(root.path());
    REQUIRE(latest);
    CHECK(latest->step == 1);
    check_equal(sample(1), io::load_checkpoint(latest->dir));
    // The next save clears the dead writer's staging directory.
    io::save_checkpoint(root.path(), 3, sample(3));
    for (const auto& e : fs::directory_iterator(root.path())) CHECK(e.path().filename().string().starts_with("checkpoint-"));
  }
}

TEST_CASE("checkpoint names and arguments are checked", "[checkpoint]") {
  testing::ScratchDir root;
  io::CheckpointData data;
  data.blobs["../escape"] = "x";
  CHECK_THROWS_WITH(io::save_checkpoint(root.path(), 1, data), Catch::Contains("invalid checkpoint file name \"../escape\""));
  data.blobs.clear();
  data.blobs[io::kManifestName] = "x";
  CHECK_THROWS_WITH(io::save_checkpoint(root.path(), 1, data), Catch::Contains("reserved for the manifest"));
  data.blobs.clear();
  data.blobs["a"] = "x";
  data.tensor_files["a"] = {};
  CHECK_THROWS_WITH(io::save_checkpoint(root.path(), 1, data), Catch::Contains("\"a\" given twice"));
  CHECK_THROWS_WITH(io::save_checkpoint(root.path(), -1, {}), Catch::Contains("step must be >= 0"));
  CHECK_THROWS_WITH(io::prune_checkpoints(root.path(), 0), Catch::Contains("keep_last must be > 0 to prune, got 0"));
  CHECK(io::list_checkpoints(root / "nowhere").empty());
  CHECK_FALSE(io::latest_valid_checkpoint(root.path()));
}
