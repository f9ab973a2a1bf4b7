// Hugging Face hub caches laid out by tests as huggingface_hub writes them: each file of a model
// folder copied into blobs/ and linked from snapshots/<commit>/, refs/<name> holding a commit id,
// and .no_exist/<commit>/<file> markers. Shared by the hub tests and the damaged-cache tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace llmrdzv::testing {

// A 40-hex commit id made of one repeated digit (distinct ids for the tests' snapshots).
inline std::string commit_id(char digit) { return std::string(40, digit); }

// The cache folder of a model repository: models--{org}--{name}.
inline std::filesystem::path repo_dir(const std::filesystem::path& cache, std::string_view repo_id) {
  std::string folder = "models--";
  for (const char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  return cache / folder;
}

// Snapshot `commit` of `repo_id` holding the files of `model` (links into blobs/, as the hub
// cache has them).
inline void lay_snapshot(const std::filesystem::path& cache, std::string_view repo_id, const std::string& commit,
                         const std::filesystem::path& model) {
  namespace fs = std::filesystem;
  const fs::path repo = repo_dir(cache, repo_id);
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / commit);
  for (const auto& entry : fs::directory_iterator(model)) {
    if (!entry.is_regular_file()) continue;  // a run's token-cache/ and runs/ are no model files
    const std::string blob = commit.substr(0, 8) + "-" + entry.path().filename().string();
    fs::copy_file(entry.path(), repo / "blobs" / blob, fs::copy_options::overwrite_existing);
    fs::create_symlink(fs::path("../../blobs") / blob, repo / "snapshots" / commit / entry.path().filename());
  }
}

// refs/<ref> of `repo_id` = `text` (a commit id, as huggingface_hub writes it: no newline).
inline void set_ref(const std::filesystem::path& cache, std::string_view repo_id, const std::string& ref,
                    const std::string& text) {
  const std::filesystem::path file = repo_dir(cache, repo_id) / "refs" / ref;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

// The marker huggingface_hub leaves when the hub answered that `file` is not in `commit`.
inline void mark_absent(const std::filesystem::path& cache, std::string_view repo_id, const std::string& commit,
                        const std::string& file) {
  const std::filesystem::path marker = repo_dir(cache, repo_id) / ".no_exist" / commit / file;
  std::filesystem::create_directories(marker.parent_path());
  std::ofstream{marker};
}

}  // namespace llmrdzv::testing
