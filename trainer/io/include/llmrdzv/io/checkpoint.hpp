// Training checkpoints on disk: <root>/checkpoint-<step>/ with any number of safetensors files
// (model, optimizer state, ...) and byte blobs (trainer state JSON, RNG state, ...) the loop chooses,
// plus MANIFEST.json listing every file's size and SHA-256. A checkpoint is written into a hidden
// temporary directory, each file fsynced, the manifest written last, then renamed into place and the
// root fsynced: a crash leaves either no checkpoint-<step> or a complete one. Loading verifies the
// manifest first, so a partial or corrupt checkpoint is reported, never loaded silently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmrdzv/io/checkpoint_name.hpp"
#include "llmrdzv/io/safetensors_torch.hpp"

namespace llmrdzv::io {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckpointData {
  // File name (e.g. "model.safetensors", "optimizer.safetensors") -> tensors written to it.
  std::map<std::string, NamedTensors> tensor_files;
  // File name -> tensors read only as the file is written (a model saved unit by unit: see
  // deferred_hf_state_dict). Loading gives them back as tensor_files.
  std::map<std::string, std::vector<DeferredTensor>> deferred_tensor_files;
  // File name (e.g. "trainer_state.json", "rng_state.bin") -> exact bytes.
  std::map<std::string, std::string> blobs;
  // Free-form string metadata stored in the manifest (e.g. "global_step").
  std::map<std::string, std::string> metadata;
};

struct CheckpointInfo {
  std::int64_t step = 0;
  std::filesystem::path dir;
};

inline constexpr const char* kManifestName = "MANIFEST.json";

// Writes <root>/checkpoint-<step> (root is created if needed) and then, when keep_last > 0, removes
// the oldest checkpoints so that keep_last remain. File names must be plain names (no '/', not
// MANIFEST.json, no duplicates across tensor_files and blobs). Throws CheckpointError; an existing
// checkpoint-<step> is replaced only after the new one is complete.
std::filesystem::path save_checkpoint(const std::filesystem::path& root, std::int64_t step,
                                      const CheckpointData& data, int keep_last = 0);

// Throws CheckpointError naming the checkpoint and the problem: missing or malformed manifest,
// a listed file missing or of the wrong size or checksum, an unlisted extra file.
void verify_checkpoint(const std::filesystem::path& dir);

// verify_checkpoint, then reads every file. alias=true keeps tensors on the files' memory maps
// (read-only views); alias=false copies them.
CheckpointData load_checkpoint(const std::filesystem::path& dir, bool alias = false);

// Every directory named checkpoint-<N> (parse_checkpoint_step) under root, by increasing step
// (valid or not).
std::vector<CheckpointInfo> list_checkpoints(const std::filesystem::path& root);

// Removes the oldest checkpoints under root so that keep_last (> 0) remain, never the one of
// `protected_step` (the one just saved) nor the one of `best_step` (--load_best_model_at_end's;
// keep_last 1 then keeps both, as transformers does). Checkpoints past protected_step (left by a
// run that was resumed from an earlier checkpoint) count as older than every other. Each is
// renamed to a hidden name first, so a crash mid-delete leaves no half checkpoint. Writers that
// must agree first (the ranks of one run) save with keep_last 0 and prune once all of them have saved.
void prune_checkpoints(const std::filesystem::path& root, int keep_last, std::int64_t protected_step = -1,
                       std::optional<std::int64_t> best_step = std::nullopt);

// The newest checkpoint that verifies; the reasons the newer ones failed go to `rejected`
// ("<dir>: <problem>") so the caller can report them. nullopt when none verifies.
std::optional<CheckpointInfo> latest_valid_checkpoint(const std::filesystem::path& root,
                                                      std::vector<std::string>* rejected = nullptr);

}  // namespace llmrdzv::io
