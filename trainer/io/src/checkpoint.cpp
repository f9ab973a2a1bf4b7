// Checkpoint directories: staged writes with checksums, a manifest written last, an atomic swap
// into place, verification before loading, and keep-last-K rotation.
#include "llmrdzv/io/checkpoint.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/sha256.hpp"

namespace llmrdzv::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFormat = "llm-rdzv-checkpoint";
constexpr std::int64_t kVersion = 1;
constexpr std::string_view kTempPrefix = ".checkpoint-tmp-";

struct FileRecord {
  std::string kind;  // "tensors" or "blob"
  std::uint64_t size = 0;
  std::string sha256;
};

// Checked when a checkpoint is written and again when its manifest is read: a name in a damaged or
// hand-made manifest must not reach outside the checkpoint ("../x") or past NAME_MAX.
void check_file_name(const std::string& name, std::set<std::string>& seen) {
  if (name.empty() || name.size() > 255 || name.find('/') != std::string::npos || name.find('\0') != std::string::npos ||
      name.front() == '.') {
    throw CheckpointError("invalid checkpoint file name \"" + name + "\" (plain names only)");
  }
  if (name == kManifestName) throw CheckpointError("\"" + name + "\" is reserved for the manifest");
  if (!seen.insert(name).second) throw CheckpointError("checkpoint file \"" + name + "\" given twice");
}

// Writes one file through atomic_write while counting and hashing its bytes.
FileRecord write_hashed(const fs::path& path, std::string kind, const std::function<void(const ChunkSink&)>& produce) {
  FileRecord record;
  record.kind = std::move(kind);
  Sha256 sha;
  atomic_write(path, [&](const ChunkSink& sink) {
    produce([&](std::span<const std::byte> chunk) {
      sha.update(chunk);
      record.size += chunk.size();
      sink(chunk);
    });
  });
  record.sha256 = sha.hex_digest();
  return record;
}

std::string hash_file(const fs::path& path, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError("cannot open " + path.string() + ": " + std::strerror(errno));
  Sha256 sha;
  std::vector<std::byte> buffer(1 << 20);
  size = 0;
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw CheckpointError("cannot read " + path.string() + ": " + std::strerror(err));
    }
    if (n == 0) break;
    sha.update(std::span(buffer.data(), static_cast<std::size_t>(n)));
    size += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return sha.hex_digest();
}

void remove_tree(const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) throw CheckpointError("cannot remove " + dir.string() + ": " + ec.message());
}

// Staging directories of saves whose process is gone (a crash mid-save) are garbage.
void remove_stale_staging(const fs::path& root) {
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kTempPrefix)) continue;
    const std::string pid_text = name.substr(kTempPrefix.size(), name.find('-', kTempPrefix.size()) - kTempPrefix.size());
    int pid = 0;
    auto [ptr, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
    if (ec == std::errc() && pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
      remove_tree(entry.path());
    }
  }
}

json::Value manifest_json(std::int64_t step, const std::map<std::string, FileRecord>& files,
                          const std::map<std::string, std::string>& metadata) {
  json::Object file_entries;
  for (const auto& [name, r] : files) {
    file_entries.emplace_back(name, json::Object{{"kind", json::Value(r.kind)},
                                                 {"size", json::Value(static_cast<std::int64_t>(r.size))},
                                                 {"sha256", json::Value(r.sha256)}});
  }
  json::Object meta;
  for (const auto& [k, v] : metadata) meta.emplace_back(k, json::Value(v));
  return json::Object{{"format", json::Value(std::string(kFormat))},
                      {"version", json::Value(kVersion)},
                      {"step", json::Value(step)},
                      {"files", json::Value(std::move(file_entries))},
                      {"metadata", json::Value(std::move(meta))}};
}

struct Manifest {
  std::int64_t step = 0;
  std::map<std::string, FileRecord> files;
  std::map<std::string, std::string> metadata;
};

Manifest read_manifest(const fs::path& dir) {
  auto fail = [&](const std::string& what) -> void { throw CheckpointError(dir.string() + ": " + what); };
  const fs::path path = dir / kManifestName;
  if (!fs::exists(path)) fail(std::string("no ") + kManifestName + " (incomplete or not a checkpoint)");
  Manifest m;
  try {
    const json::Value doc = json::parse(read_file(path));
    if (doc.find("format") == nullptr || doc.find("format")->as_string() != kFormat) fail("manifest has an unknown format");
    if (doc.find("version") == nullptr || doc.find("version")->as_integer() != kVersion) fail("unsupported manifest version");
    m.step = doc.find("step") ? doc.find("step")->as_integer() : -1;
    const json::Value* files = doc.find("files");
    if (!files) fail("manifest lists no files");
    std::set<std::string> names;
    for (const auto& [name, entry] : files->as_object()) {
      try {
        check_file_name(name, names);
      } catch (const CheckpointError& e) {
        fail(std::string("manifest: ") + e.what());
      }
      FileRecord r;
      const json::Value* kind = entry.find("kind");
      const json::Value* size = entry.find("size");
      const json::Value* sha = entry.find("sha256");
      if (!kind || !size || !sha) fail("manifest entry \"" + name + "\" needs kind, size and sha256");
      r.kind = kind->as_string();
      if (r.kind != "tensors" && r.kind != "blob") fail("manifest entry \"" + name + "\" has unknown kind \"" + r.kind + "\"");
      if (size->as_integer() < 0) fail("manifest entry \"" + name + "\" has a negative size");
      r.size = static_cast<std::uint64_t>(size->as_integer());
      r.sha256 = sha->as_string();
      m.files.emplace(name, std::move(r));
    }
    if (const json::Value* meta = doc.find("metadata")) {
      for (const auto& [k, v] : meta->as_object()) m.metadata.emplace(k, v.as_string());
    }
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    fail(std::string("malformed manifest: ") + e.what());
  }
  return m;
}

}  // namespace

fs::path save_checkpoint(const fs::path& root, std::int64_t step, const CheckpointData& data, int keep_last) {
  if (step < 0) throw CheckpointError("checkpoint step must be >= 0, got " + std::to_string(step));
  if (keep_last < 0) throw CheckpointError("keep_last must be >= 0, got " + std::to_string(keep_last));
  std::set<std::string> names;
  for (const auto& [name, tensors] : data.tensor_files) check_file_name(name, names);
  for (const auto& [name, tensors] : data.deferred_tensor_files) check_file_name(name, names);
  for (const auto& [name, bytes] : data.blobs) check_file_name(name, names);

  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw CheckpointError("cannot create " + root.string() + ": " + ec.message());
  remove_stale_staging(root);

  const fs::path staging = root / (std::string(kTempPrefix) + std::to_string(::getpid()) + "-" + std::to_string(step));
  remove_tree(staging);
  fs::create_directory(staging, ec);
  if (ec) throw CheckpointError("cannot create " + staging.string() + ": " + ec.message());
  const fs::path final_dir = root / checkpoint_dir_name(step);
  try {
    std::map<std::string, FileRecord> records;
    for (const auto& [name, tensors] : data.tensor_files) {
      std::vector<at::Tensor> keep;
      const std::vector<TensorBytes> views = tensor_bytes(tensors, keep);
      records[name] = write_hashed(staging / name, "tensors", [&](const ChunkSink& sink) { stream_safetensors(sink, views); });
    }
    for (const auto& [name, tensors] : data.deferred_tensor_files) {
      records[name] = write_hashed(staging / name, "tensors",
                                   [&](const ChunkSink& sink) { stream_deferred_safetensors(sink, tensors); });
    }
    for (const auto& [name, bytes] : data.blobs) {
      records[name] = write_hashed(staging / name, "blob", [&](const ChunkSink& sink) {
        sink(std::as_bytes(std::span(bytes.data(), bytes.size())));
      });
    }
    atomic_write(staging / kManifestName, json::write(manifest_json(step, records, data.metadata), 2) + "\n");
    fsync_directory(staging);

    if (fs::exists(final_dir)) {
      // Swap atomically so checkpoint-<step> is never absent, then drop the old one.
      // Filesystems without RENAME_EXCHANGE: move the old one aside first (a short window in which
      // only the older checkpoints exist).
      if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) != 0) {
        const fs::path aside = staging.string() + "-old";
        if (errno != EINVAL || ::rename(final_dir.c_str(), aside.c_str()) != 0 ||
            ::rename(staging.c_str(), final_dir.c_str()) != 0) {
          throw CheckpointError("cannot replace " + final_dir.string() + ": " + std::strerror(errno));
        }
        fs::rename(aside, staging);
      }
    } else if (::rename(staging.c_str(), final_dir.c_str()) != 0) {
      throw CheckpointError("cannot rename " + staging.string() + " to " + final_dir.string() + ": " + std::strerror(errno));
    }
    fsync_directory(root);
  } catch (const IoError& e) {
    remove_tree(staging);
    throw CheckpointError(std::string("cannot write checkpoint: ") + e.what());
  } catch (...) {
    remove_tree(staging);
    throw;
  }
  remove_tree(staging);  // the previous checkpoint-<step> after a swap; nothing otherwise

  if (keep_last > 0) prune_checkpoints(root, keep_last, step);
  return final_dir;
}

void prune_checkpoints(const fs::path& root, int keep_last, std::int64_t protected_step,
                       std::optional<std::int64_t> best_step) {
  if (keep_last <= 0) throw CheckpointError("keep_last must be > 0 to prune, got " + std::to_string(keep_last));
  std::vector<CheckpointInfo> all = list_checkpoints(root);
  const std::size_t excess = all.size() > static_cast<std::size_t>(keep_last) ? all.size() - keep_last : 0;
  if (excess == 0) return;
  // Past the protected (newest saved) step lie checkpoints of a run abandoned by resuming from an
  // earlier one: they go first, oldest to newest, then the run's own from the oldest.
  if (protected_step >= 0) {
    std::stable_partition(all.begin(), all.end(), [&](const CheckpointInfo& c) { return c.step > protected_step; });
  }
  std::error_code ec;
  for (std::size_t i = 0, removed = 0; i < all.size() && removed < excess; ++i) {
    if (all[i].step == protected_step || all[i].step == best_step) continue;
    // Rename first so a crash mid-delete leaves a hidden directory, not a half checkpoint.
    const fs::path doomed = root / (std::string(kTempPrefix) + std::to_string(::getpid()) + "-rm-" + std::to_string(all[i].step));
    fs::rename(all[i].dir, doomed, ec);
    remove_tree(ec ? all[i].dir : doomed);
    ++removed;
  }
  fsync_directory(root);
}

void verify_checkpoint(const fs::path& dir) try {
  if (!fs::is_directory(dir)) throw CheckpointError(dir.string() + ": not a directory");
  const Manifest m = read_manifest(dir);
  if (const auto step = parse_checkpoint_step(dir.filename().string()); step && *step != m.step) {
    throw CheckpointError(dir.string() + ": manifest is for step " + std::to_string(m.step));
  }
  for (const auto& [name, record] : m.files) {
    const fs::path path = dir / name;
    if (!fs::is_regular_file(path)) throw CheckpointError(dir.string() + ": file " + name + " is missing");
    std::uint64_t size = 0;
    const std::string sha = hash_file(path, size);
    if (size != record.size) {
      throw CheckpointError(dir.string() + ": file " + name + " has " + std::to_string(size) + " bytes, the manifest says " +
                            std::to_string(record.size) + " (truncated or modified)");
    }
    if (sha != record.sha256) throw CheckpointError(dir.string() + ": file " + name + " fails its SHA-256 check (corrupt)");
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name != kManifestName && !m.files.count(name)) {
      throw CheckpointError(dir.string() + ": file " + name + " is not in the manifest");
    }
  }
} catch (const fs::filesystem_error& e) {  // unreadable entries: the checkpoint is not usable either
  throw CheckpointError(dir.string() + ": " + e.what());
}

CheckpointData load_checkpoint(const fs::path& dir, bool alias) {
  verify_checkpoint(dir);
  const Manifest m = read_manifest(dir);
  CheckpointData data;
  data.metadata = m.metadata;
  for (const auto& [name, record] : m.files) {
    if (record.kind == "tensors") {
      try {
        data.tensor_files[name] = read_tensors(SafetensorsFile::open(dir / name), alias);
      } catch (const SafetensorsError& e) {
        throw CheckpointError(e.what());
      }
    } else {
      data.blobs[name] = read_file(dir / name);
    }
  }
  return data;
}

std::vector<CheckpointInfo> list_checkpoints(const fs::path& root) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    if (const auto step = parse_checkpoint_step(entry.path().filename().string())) out.push_back({*step, entry.path()});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointInfo> latest_valid_checkpoint(const fs::path& root, std::vector<std::string>* rejected) {
  const std::vector<CheckpointInfo> all = list_checkpoints(root);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      verify_checkpoint(it->dir);
      return *it;
    } catch (const CheckpointError& e) {
      if (rejected) rejected->push_back(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace llmrdzv::io
