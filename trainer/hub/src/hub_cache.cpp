// Offline resolution of hub model names against the huggingface_hub cache layout (hub_cache.hpp).
#include "llmrdzv/hub/hub_cache.hpp"

#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>

namespace llmrdzv::hub {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// os.path.expanduser then os.path.expandvars, as huggingface_hub applies them to its variables:
// a leading '~' is $HOME, $NAME and ${NAME} of set variables are their values, others stay.
std::string expand(const std::string& text) {
  std::string path = text;
  if (path == "~" || path.starts_with("~/")) path = env("HOME") + path.substr(1);
  std::string out;
  for (std::size_t i = 0; i < path.size();) {
    if (path[i] != '$') {
      out += path[i++];
      continue;
    }
    const bool braced = i + 1 < path.size() && path[i + 1] == '{';
    std::size_t start = i + (braced ? 2 : 1);
    std::size_t end = start;
    while (end < path.size() && (std::isalnum(static_cast<unsigned char>(path[end])) || path[end] == '_')) ++end;
    const bool closed = !braced || (end < path.size() && path[end] == '}');
    const std::string name = path.substr(start, end - start);
    if (name.empty() || !closed || !std::getenv(name.c_str())) {
      out += path[i++];
      continue;
    }
    out += env(name.c_str());
    i = end + (braced ? 1 : 0);
  }
  return out;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// One part of a repo id: 1 to 96 of [A-Za-z0-9_.-], starting and ending with a word character.
bool is_id_part(std::string_view part) {
  if (part.empty() || part.size() > 96 || !is_word_char(part.front()) || !is_word_char(part.back())) return false;
  for (const char c : part) {
    if (!is_word_char(c) && c != '-' && c != '.') return false;
  }
  return true;
}

bool is_commit(std::string_view text) {
  if (text.size() != 40) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// huggingface_hub's folder of a repository: models--{org}--{name}, datasets--{org}--{name}.
std::string repo_folder(std::string_view repo_id, RepoType type) {
  std::string folder = type == RepoType::model ? "models--" : "datasets--";
  for (const char c : repo_id) {
    if (c == '/') {
      folder += "--";
    } else {
      folder += c;
    }
  }
  return folder;
}

// The canonical models that moved into organisations in 2024: the hub redirects the old names,
// and a cache holds them under whichever name they were downloaded with.
constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kMovedModels{{
    {"gpt2", "openai-community/gpt2"},
    {"gpt2-medium", "openai-community/gpt2-medium"},
    {"gpt2-large", "openai-community/gpt2-large"},
    {"gpt2-xl", "openai-community/gpt2-xl"},
    {"distilgpt2", "distilbert/distilgpt2"},
}};

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

// A repository folder's snapshot for `revision`, or why there is none.
struct Lookup {
  std::optional<fs::path> snapshot;
  std::string commit;
  std::string problem;
};

Lookup failed(std::string problem) { return {std::nullopt, "", std::move(problem)}; }

Lookup find_snapshot(const fs::path& folder, const std::string& revision) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return failed("not there");
  Lookup lookup;
  if (is_commit(revision)) {
    lookup.commit = revision;
  } else {
    const fs::path ref = folder / "refs" / revision;
    if (!fs::is_regular_file(ref, ec)) {
      return failed("no refs/" + revision + " (revision " + revision + " was never downloaded)");
    }
    std::ifstream in(ref, std::ios::binary);
    std::string text(64, '\0');  // a commit id is 40 characters: more is damage, however long
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad() || !in.is_open()) return failed("cannot read " + quoted(ref));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (!is_commit(text)) return failed(quoted(ref) + " does not hold a 40-hex commit id (damaged ref)");
    lookup.commit = std::move(text);
  }
  const fs::path snapshot = folder / "snapshots" / lookup.commit;
  if (!fs::is_directory(snapshot, ec)) {
    return failed((is_commit(revision) ? "commit " : "refs/" + revision + " names commit ") + lookup.commit +
                       ", which has no snapshot folder " + quoted(snapshot));
  }
  lookup.snapshot = snapshot;
  return lookup;
}

// Why `snapshot` lacks one of `alternatives`, or empty when it holds one.
std::string missing_file(const fs::path& folder, const Lookup& lookup, const RequiredFile& alternatives) {
  std::error_code ec;
  std::string names;
  bool all_recorded = true;
  for (const std::string_view name : alternatives) {
    const fs::path file = *lookup.snapshot / name;
    if (fs::is_regular_file(file, ec)) return "";
    if (fs::is_symlink(file, ec)) {
      return quoted(file) + " points to " + quoted(fs::read_symlink(file, ec)) + ", which is missing (an interrupted download?)";
    }
    all_recorded = all_recorded && fs::exists(folder / ".no_exist" / lookup.commit / name, ec);
    names += (names.empty() ? "" : " or ") + std::string(name);
  }
  if (all_recorded) {
    return "the repository has no " + names + " at commit " + lookup.commit + " (the cache records it as absent in .no_exist/" +
           lookup.commit + "/)";
  }
  return "snapshot " + quoted(*lookup.snapshot) + " has no " + names + " (not downloaded)";
}

std::string download_command(const std::string& name, const std::string& revision, const CacheDir& cache, RepoType type) {
  std::string command = "hf download " + name +
                        (type == RepoType::model ? " --include \"*.json\" --include \"*.safetensors\" --include \"*.txt\""
                                                 : " --repo-type dataset");
  if (revision != "main") command += " --revision " + revision;
  if (cache.origin == "--cache_dir") command += " --cache-dir " + cache.path.string();
  return command;
}

}  // namespace

CacheDir model_cache_dir(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return {explicit_dir, "--cache_dir"};
  if (const std::string dir = env("HF_HUB_CACHE"); !dir.empty()) return {expand(dir), "$HF_HUB_CACHE"};
  if (const std::string dir = env("HUGGINGFACE_HUB_CACHE"); !dir.empty()) return {expand(dir), "$HUGGINGFACE_HUB_CACHE"};
  if (const std::string home = env("HF_HOME"); !home.empty()) return {fs::path(expand(home)) / "hub", "$HF_HOME/hub"};
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) {
    return {fs::path(expand(xdg)) / "huggingface" / "hub", "$XDG_CACHE_HOME/huggingface/hub"};
  }
  return {fs::path(expand("~/.cache")) / "huggingface" / "hub", "~/.cache/huggingface/hub"};
}

bool is_repo_id(std::string_view name) {
  if (name.find("--") != std::string_view::npos || name.find("..") != std::string_view::npos || name.ends_with(".git")) {
    return false;
  }
  const std::size_t slash = name.find('/');
  if (slash == std::string_view::npos) return is_id_part(name);
  return is_id_part(name.substr(0, slash)) && is_id_part(name.substr(slash + 1));
}

std::string_view moved_name(std::string_view repo_id) {
  for (const auto& [old_name, new_name] : kMovedModels) {
    if (repo_id == old_name) return new_name;
    if (repo_id == new_name) return old_name;
  }
  return {};
}

Resolved resolve(const std::string& name, const std::string& revision, const CacheDir& cache, std::string_view option,
                 std::span<const RequiredFile> required, RepoType type) {
  std::error_code ec;
  if (fs::is_directory(name, ec)) return {name, false, ""};
  const std::string what = std::string(option) + " '" + name + "'";
  if (!is_repo_id(name)) {
    throw HubError(what + " is not a directory" + (fs::exists(name, ec) ? "" : " (it does not exist)") +
                   ", nor a hub " + (type == RepoType::model ? "model" : "dataset") + " name (name or org/name)");
  }
  if (revision.empty() || revision.starts_with('/') || revision == ".." || revision.starts_with("../") ||
      revision.find("/../") != std::string::npos || revision.ends_with("/..")) {
    throw HubError(what + ": revision '" + revision + "' is not a branch, tag or commit name");
  }
  std::vector<std::string> names{name};
  if (const std::string_view other = moved_name(name); type == RepoType::model && !other.empty()) names.emplace_back(other);
  std::string problems;  // every folder's, for the error
  std::string damage;    // those of folders that are there, for the log when another one is used
  for (const std::string& repo_id : names) {
    const fs::path folder = cache.path / repo_folder(repo_id, type);
    Lookup lookup = find_snapshot(folder, revision);
    for (std::size_t i = 0; lookup.snapshot && i < required.size(); ++i) {
      if (std::string problem = missing_file(folder, lookup, required[i]); !problem.empty()) {
        lookup = failed(std::move(problem));
      }
    }
    if (!lookup.snapshot) {
      problems += "; " + quoted(folder) + ": " + lookup.problem;
      if (fs::is_directory(folder, ec)) damage += "; " + quoted(folder) + ": " + lookup.problem;
      continue;
    }
    std::string description = "hub cache " + quoted(folder);
    if (repo_id != name) description += " (" + name + " is now " + repo_id + " on the hub, and was downloaded under that name)";
    description += ", revision " + revision + (is_commit(revision) ? "" : " = commit " + lookup.commit) + ", snapshot " +
                   quoted(*lookup.snapshot);
    if (!damage.empty()) description += " (not used" + damage.substr(1) + ")";
    return {*lookup.snapshot, true, std::move(description)};
  }
  throw HubError(what + " is not a local directory and the hub cache " + cache.path.string() + " (" + cache.origin +
                 ") has no usable snapshot of it (the trainer never downloads)" + problems +
                 "; fill the cache on a machine with network (a login node) with: " + download_command(name, revision, cache, type));
}

}  // namespace llmrdzv::hub
