// The three offline dataset layouts (dataset_files.hpp), found by their folder structure and the
// JSON and YAML files datasets and the hub write next to the data.
#include "llmrdzv/datasets/dataset_files.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

#include "llmrdzv/common/yaml_document.hpp"
#include "llmrdzv/hub/hub_cache.hpp"
#include "llmrdzv/io/json.hpp"

namespace llmrdzv::datasets {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// os.path.expanduser: a leading '~' is $HOME.
std::string expand_user(const std::string& path) {
  return path == "~" || path.starts_with("~/") ? env("HOME") + path.substr(1) : path;
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DatasetError("cannot read " + quoted(file));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json::Value read_json(const fs::path& file) {
  try {
    return json::parse(read_text(file));
  } catch (const json::ParseError& e) {
    throw DatasetError(quoted(file) + " is not valid JSON: " + e.what());
  }
}

// A member of a JSON object that must be there with a given type (what names it for messages).
const json::Value& member(const json::Value& object, std::string_view key, const fs::path& file) {
  const json::Value* value = object.is_object() ? object.find(key) : nullptr;
  if (!value) throw DatasetError(quoted(file) + " has no \"" + std::string(key) + "\"");
  return *value;
}

// datasets' camelcase_to_snakecase: "WikiText" -> "wiki_text", "SQuAD" -> "squad"... as its two
// regular expressions do it ("ABc" -> "A_Bc", then "aB"/"1B" -> "a_B"), then lower case.
std::string snake_case(const std::string& name) {
  std::string first;
  for (std::size_t i = 0; i < name.size(); ++i) {
    first += name[i];
    // ([A-Z]+)([A-Z][a-z]): an upper-case run followed by an upper then a lower letter.
    if (std::isupper(static_cast<unsigned char>(name[i])) && i + 2 < name.size() &&
        std::isupper(static_cast<unsigned char>(name[i + 1])) && std::islower(static_cast<unsigned char>(name[i + 2]))) {
      first += '_';
    }
  }
  std::string out;
  for (std::size_t i = 0; i < first.size(); ++i) {
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(first[i])));
    const unsigned char c = static_cast<unsigned char>(first[i]);
    if ((std::islower(c) || std::isdigit(c)) && i + 1 < first.size() &&
        std::isupper(static_cast<unsigned char>(first[i + 1]))) {
      out += '_';
    }
  }
  return out;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
  std::sort(entries.begin(), entries.end());
  return entries;
}

// (c) save_to_disk ------------------------------------------------------------------------------

// One split folder of save_to_disk: state.json's _data_files, in order.
std::vector<fs::path> saved_split_files(const fs::path& dir) {
  const fs::path state_file = dir / "state.json";
  const json::Value state = read_json(state_file);
  const json::Value& files = member(state, "_data_files", state_file);
  if (!files.is_array() || files.as_array().empty()) throw DatasetError(quoted(state_file) + ": \"_data_files\" lists no files");
  std::vector<fs::path> paths;
  for (const json::Value& entry : files.as_array()) {
    const json::Value& name = member(entry, "filename", state_file);
    if (!name.is_string() || name.as_string().empty() || name.as_string().find('/') != std::string::npos ||
        name.as_string() == "..") {
      throw DatasetError(quoted(state_file) + ": a \"_data_files\" entry is not a plain file name");
    }
    const fs::path file = dir / name.as_string();
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) throw DatasetError(quoted(state_file) + " lists " + quoted(file) + ", which is missing");
    paths.push_back(file);
  }
  return paths;
}

DatasetFiles saved_dataset(const fs::path& dir) {
  DatasetFiles found;
  found.format = FileFormat::arrow_stream;
  std::error_code ec;
  if (fs::is_regular_file(dir / "state.json", ec)) {  // Dataset.save_to_disk: one split
    found.splits["train"] = saved_split_files(dir);
    found.description = "a Dataset.save_to_disk folder " + quoted(dir) + " (its rows as the train split)";
    return found;
  }
  const fs::path dict_file = dir / "dataset_dict.json";
  const json::Value dict = read_json(dict_file);
  const json::Value& splits = member(dict, "splits", dict_file);
  if (!splits.is_array() || splits.as_array().empty()) throw DatasetError(quoted(dict_file) + ": \"splits\" names no splits");
  for (const json::Value& split : splits.as_array()) {
    if (!split.is_string() || split.as_string().empty() || split.as_string().find('/') != std::string::npos ||
        split.as_string().starts_with(".")) {
      throw DatasetError(quoted(dict_file) + ": a split name is not a plain name");
    }
    if (!fs::is_directory(dir / split.as_string(), ec)) {
      throw DatasetError(quoted(dict_file) + " names split '" + split.as_string() + "', whose folder " +
                         quoted(dir / split.as_string()) + " is missing");
    }
    found.splits[split.as_string()] = saved_split_files(dir / split.as_string());
  }
  found.description = "a DatasetDict.save_to_disk folder " + quoted(dir);
  return found;
}

// (a) the Arrow cache ---------------------------------------------------------------------------

struct CachedBuild {
  fs::path dir;  // {root}/{config}/{version}/{hash}
  fs::file_time_type mtime;
};

// dataset_info.json's config_name of a build folder, or nullopt when it has none readable.
std::optional<std::string> build_config_name(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "dataset_info.json", ec)) return std::nullopt;
  const json::Value info = read_json(dir / "dataset_info.json");
  const json::Value* name = info.is_object() ? info.find("config_name") : nullptr;
  if (!name || !name->is_string()) return std::nullopt;
  return name->as_string();
}

std::optional<DatasetFiles> arrow_cache_dataset(const DatasetRequest& request, const fs::path& cache, std::string& looked) {
  const std::size_t slash = request.name.find('/');
  const std::string org = slash == std::string::npos ? "" : request.name.substr(0, slash);
  const std::string name = snake_case(slash == std::string::npos ? request.name : request.name.substr(slash + 1));
  const fs::path root = cache / ((org.empty() ? "" : org + "___") + name);
  looked += "; the datasets Arrow cache " + quoted(root);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    looked += ": not there";
    return std::nullopt;
  }
  // Every {config}/{version}/{hash} folder whose dataset_info.json names that config.
  std::vector<CachedBuild> builds;
  for (const fs::path& config : sorted_entries(root)) {
    if (!request.config.empty() && config.filename() != request.config) continue;
    for (const fs::path& version : sorted_entries(config)) {
      for (const fs::path& hash : sorted_entries(version)) {
        if (!fs::is_directory(hash, ec) || build_config_name(hash) != config.filename().string()) continue;
        builds.push_back({hash, fs::last_write_time(hash, ec)});
      }
    }
  }
  if (builds.empty()) {
    looked += request.config.empty() ? ": no complete build (dataset_info.json naming its config)"
                                     : ": no complete build of config '" + request.config + "'";
    return std::nullopt;
  }
  const auto newest = std::max_element(builds.begin(), builds.end(),
                                       [](const CachedBuild& a, const CachedBuild& b) { return a.mtime < b.mtime; });
  const fs::path dir = newest->dir;
  if (request.config.empty()) {
    std::vector<std::string> configs;
    for (const CachedBuild& build : builds) {
      if (build.dir.parent_path().filename() == dir.parent_path().filename() && build.dir.filename() == dir.filename()) {
        configs.push_back(build.dir.parent_path().parent_path().filename().string());
      }
    }
    if (configs.size() > 1) {
      std::string list;
      for (const std::string& c : configs) list += (list.empty() ? "" : ", ") + c;
      throw DatasetError(quoted(root) + " holds several configurations (" + list + "): give --dataset_config_name");
    }
  }
  const fs::path info_file = dir / "dataset_info.json";
  const json::Value info = read_json(info_file);
  const json::Value& splits = member(info, "splits", info_file);
  if (!splits.is_object() || splits.as_object().empty()) throw DatasetError(quoted(info_file) + ": \"splits\" names no splits");
  DatasetFiles found;
  found.format = FileFormat::arrow_stream;
  for (const auto& [split, split_info] : splits.as_object()) {
    const json::Value* prefix_value = split_info.is_object() ? split_info.find("dataset_name") : nullptr;
    const std::string prefix = prefix_value && prefix_value->is_string() ? snake_case(prefix_value->as_string()) : name;
    const json::Value* shards = split_info.is_object() ? split_info.find("shard_lengths") : nullptr;
    const std::size_t count = shards && shards->is_array() ? shards->as_array().size() : 0;
    std::vector<fs::path> files;
    if (count > 1) {
      for (std::size_t i = 0; i < count; ++i) {
        char suffix[64];
        std::snprintf(suffix, sizeof suffix, "-%05zu-of-%05zu.arrow", i, count);
        files.push_back(dir / (prefix + "-" + split + suffix));
      }
    } else {
      files.push_back(dir / (prefix + "-" + split + ".arrow"));
    }
    for (const fs::path& file : files) {
      if (!fs::is_regular_file(file, ec)) {
        throw DatasetError(quoted(info_file) + " lists split '" + split + "', but its file " + quoted(file) + " is missing");
      }
    }
    found.splits[split] = std::move(files);
  }
  found.description = "the datasets Arrow cache " + quoted(dir) + " (config " + dir.parent_path().parent_path().filename().string() +
                      ", the newest build there)";
  return found;
}

// (b) the hub cache -----------------------------------------------------------------------------

// fsspec-style glob of one path segment: '*' any run of characters, '?' one, others themselves.
bool segment_matches(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '*') {
    for (std::size_t skip = 0; skip <= text.size(); ++skip) {
      if (segment_matches(pattern.substr(1), text.substr(skip))) return true;
    }
    return false;
  }
  return !text.empty() && (pattern[0] == '?' || pattern[0] == text[0]) && segment_matches(pattern.substr(1), text.substr(1));
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return parts;
}

// A relative path against a pattern whose "**" segments match any number of segments.
bool path_matches(std::span<const std::string_view> pattern, std::span<const std::string_view> path) {
  if (pattern.empty()) return path.empty();
  if (pattern[0] == "**") {
    for (std::size_t skip = 0; skip <= path.size(); ++skip) {
      if (path_matches(pattern.subspan(1), path.subspan(skip))) return true;
    }
    return false;
  }
  return !path.empty() && segment_matches(pattern[0], path[0]) && path_matches(pattern.subspan(1), path.subspan(1));
}

// The snapshot's files matching `pattern` (relative to it), in path order.
std::vector<fs::path> glob(const fs::path& snapshot, const std::string& pattern, const fs::path& readme) {
  if (pattern.empty() || pattern.starts_with('/') || pattern.find("..") != std::string::npos) {
    throw DatasetError(quoted(readme) + ": data file pattern '" + pattern + "' is not a path inside the repository");
  }
  const std::vector<std::string_view> wanted = split_path(pattern);
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(snapshot, ec), end; !ec && it != end; it.increment(ec)) {
    if (!fs::is_regular_file(it->path(), ec)) continue;
    const std::string relative = fs::relative(it->path(), snapshot, ec).generic_string();
    const std::vector<std::string_view> parts = split_path(relative);
    if (path_matches(wanted, parts)) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The YAML between the README's leading "---" lines (the dataset card's metadata), or null.
YAML::Node card_metadata(const fs::path& readme) {
  std::error_code ec;
  if (!fs::is_regular_file(readme, ec)) return YAML::Node();
  const std::string text = read_text(readme);
  if (!text.starts_with("---\n")) return YAML::Node();
  const std::size_t end = text.find("\n---", 3);
  if (end == std::string::npos) throw DatasetError(quoted(readme) + ": its metadata block (after the first ---) never ends");
  try {
    return load_yaml_document(text.substr(4, end - 3));
  } catch (const std::exception& e) {
    throw DatasetError(quoted(readme) + ": its metadata block is " + e.what());
  }
}

std::vector<std::string> string_list(const YAML::Node& node, const fs::path& readme) {
  std::vector<std::string> out;
  try {
    if (node.IsScalar()) {
      out.push_back(node.as<std::string>());
    } else if (node.IsSequence()) {
      for (const YAML::Node& item : node) out.push_back(item.as<std::string>());
    }
  } catch (const YAML::Exception&) {
    out.clear();
  }
  if (out.empty()) throw DatasetError(quoted(readme) + ": a data_files \"path\" is neither a pattern nor a list of them");
  return out;
}

// The `configs:` entry for the requested config (or the default one) mapped to split -> patterns.
std::optional<std::map<std::string, std::vector<std::string>>> configured_splits(const YAML::Node& metadata,
                                                                               const std::string& config,
                                                                               const fs::path& readme, std::string& chosen) {
  if (!metadata.IsMap() || !metadata["configs"]) return std::nullopt;
  const YAML::Node configs = metadata["configs"];
  if (!configs.IsSequence()) throw DatasetError(quoted(readme) + ": \"configs\" is not a list");
  YAML::Node entry;
  bool found = false;
  std::vector<std::string> names;
  try {
    for (const YAML::Node& item : configs) {
      const std::string name = item["config_name"] ? item["config_name"].as<std::string>() : "default";
      names.push_back(name);
      const bool is_default = item["default"] && item["default"].as<bool>();
      if (config.empty() ? (is_default || configs.size() == 1) : name == config) {
        entry = item;
        chosen = name;
        found = true;
      }
    }
  } catch (const YAML::Exception& e) {
    throw DatasetError(quoted(readme) + ": a \"configs\" entry is malformed: " + e.what());
  }
  if (!found) {
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    throw DatasetError(quoted(readme) + (config.empty() ? " has several configs and no default: give --dataset_config_name (one of "
                                                        : " has no config '" + config + "' (it has ") + list + ")");
  }
  std::map<std::string, std::vector<std::string>> splits;
  const YAML::Node data_files = entry["data_files"];
  if (!data_files) throw DatasetError(quoted(readme) + ": config '" + chosen + "' has no data_files");
  if (data_files.IsScalar() || (data_files.IsSequence() && data_files.size() > 0 && data_files[0].IsScalar())) {
    splits["train"] = string_list(data_files, readme);  // datasets' rule: bare patterns are the train split
    return splits;
  }
  if (!data_files.IsSequence()) throw DatasetError(quoted(readme) + ": config '" + chosen + "': data_files is not a list");
  for (const YAML::Node& item : data_files) {
    if (!item.IsMap() || !item["split"] || !item["path"]) {
      throw DatasetError(quoted(readme) + ": config '" + chosen + "': a data_files entry lacks \"split\" or \"path\"");
    }
    std::vector<std::string> patterns = string_list(item["path"], readme);
    std::vector<std::string>& into = splits[item["split"].as<std::string>()];
    into.insert(into.end(), patterns.begin(), patterns.end());
  }
  return splits;
}

// Without a `configs:` block: the config's folder, its files grouped by the split their name (or
// their folder's name) starts with, as datasets' default patterns group them.
std::map<std::string, std::vector<fs::path>> folder_splits(const fs::path& folder) {
  static const std::pair<std::string_view, std::string_view> kSplitNames[] = {
      {"train", "train"}, {"validation", "validation"}, {"valid", "validation"}, {"val", "validation"},
      {"dev", "validation"}, {"test", "test"}};
  std::map<std::string, std::vector<fs::path>> splits;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (!fs::is_regular_file(it->path(), ec) || it->path().extension() != ".parquet") continue;
    // The split is named by the file (train-00000-of-00001.parquet) or a folder on its way (train/0.parquet).
    const std::string relative = fs::relative(it->path(), folder, ec).generic_string();
    const auto split_of = [&]() -> std::string_view {
      for (const std::string_view part : split_path(relative)) {
        for (const auto& [prefix, split] : kSplitNames) {
          const std::string_view rest = part.substr(std::min(part.size(), prefix.size()));
          if (part.starts_with(prefix) && (rest.empty() || rest[0] == '-' || rest[0] == '.' || rest[0] == '_')) return split;
        }
      }
      return {};
    };
    if (const std::string_view split = split_of(); !split.empty()) splits[std::string(split)].push_back(it->path());
  }
  for (auto& [split, files] : splits) std::sort(files.begin(), files.end());
  return splits;
}

std::optional<DatasetFiles> hub_dataset(const DatasetRequest& request, std::string& looked) {
  hub::Resolved snapshot;
  const hub::CacheDir cache = hub::model_cache_dir("");
  try {
    snapshot = hub::resolve(request.name, request.revision, cache, "--dataset_name", {}, hub::RepoType::dataset);
  } catch (const hub::HubError& e) {
    looked += "; the hub cache: " + std::string(e.what());
    return std::nullopt;
  }
  const fs::path readme = snapshot.dir / "README.md";
  std::string chosen;
  DatasetFiles found;
  found.format = FileFormat::parquet;
  std::optional<std::map<std::string, std::vector<std::string>>> patterns;
  try {
    patterns = configured_splits(card_metadata(readme), request.config, readme, chosen);
  } catch (const YAML::Exception& e) {
    throw DatasetError(quoted(readme) + ": its configs block is malformed: " + e.what());
  }
  if (patterns) {
    for (const auto& [split, globs] : *patterns) {
      std::vector<fs::path>& files = found.splits[split];
      for (const std::string& pattern : globs) {
        const std::vector<fs::path> matched = glob(snapshot.dir, pattern, readme);
        if (matched.empty()) {
          throw DatasetError(quoted(readme) + ": config '" + chosen + "' split '" + split + "': no file of " +
                             quoted(snapshot.dir) + " matches '" + pattern + "' (not downloaded?)");
        }
        files.insert(files.end(), matched.begin(), matched.end());
      }
    }
  } else {
    const fs::path folder = request.config.empty() ? snapshot.dir : snapshot.dir / request.config;
    chosen = request.config.empty() ? "default" : request.config;
    found.splits = folder_splits(folder);
    if (found.splits.empty()) {
      throw DatasetError(quoted(folder) + " holds no {split}-*.parquet files (train, validation, test) and " + quoted(readme) +
                         " has no configs block naming them");
    }
  }
  for (const auto& [split, files] : found.splits) {
    for (const fs::path& file : files) {
      if (file.extension() != ".parquet") {
        throw DatasetError(quoted(file) + " of split '" + split + "' is not a parquet file: this trainer reads the parquet "
                           "files of hub datasets (load_dataset on a login node, then its Arrow cache, reads the others)");
      }
    }
  }
  found.description = snapshot.description + ", config " + chosen;
  return found;
}

}  // namespace

fs::path arrow_cache_dir(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (const std::string dir = env("HF_DATASETS_CACHE"); !dir.empty()) return expand_user(dir);
  if (const std::string home = env("HF_HOME"); !home.empty()) return fs::path(expand_user(home)) / "datasets";
  const std::string xdg = env("XDG_CACHE_HOME");
  return fs::path(expand_user(xdg.empty() ? "~/.cache" : xdg)) / "huggingface" / "datasets";
}

DatasetFiles find_dataset(const DatasetRequest& request) {
  std::error_code ec;
  if (fs::is_directory(request.name, ec) &&
      (fs::exists(fs::path(request.name) / "dataset_dict.json", ec) || fs::exists(fs::path(request.name) / "state.json", ec))) {
    return saved_dataset(request.name);
  }
  if (!hub::is_repo_id(request.name)) {
    throw DatasetError("--dataset_name '" + request.name + "' is neither a save_to_disk folder (dataset_dict.json or state.json) "
                       "nor a hub dataset name (name or org/name)");
  }
  std::string looked;
  const fs::path cache = arrow_cache_dir(request.cache_dir);
  if (auto found = arrow_cache_dataset(request, cache, looked)) return std::move(*found);
  if (auto found = hub_dataset(request, looked)) return std::move(*found);
  const std::string config = request.config.empty() ? "" : ", \"" + request.config + "\"";
  throw DatasetError("--dataset_name " + request.name + (request.config.empty() ? "" : " --dataset_config_name " + request.config) +
                     " was not found offline (the trainer never downloads)" + looked +
                     ". Fill a cache on a machine with network (a login node): python -c 'import datasets; datasets.load_dataset(\"" +
                     request.name + "\"" + config + ")' (the Arrow cache, with the same HF_HOME or HF_DATASETS_CACHE), or "
                     "hf download " + request.name + " --repo-type dataset (the hub cache), or save_to_disk(DIR) and "
                     "--dataset_name DIR");
}

}  // namespace llmrdzv::datasets
