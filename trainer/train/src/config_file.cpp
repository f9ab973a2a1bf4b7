// YAML `--config` files via yaml-cpp: a flat mapping of option names to scalars.
#include "config_file.hpp"

#include <set>

#include "llmrdzv/common/yaml_document.hpp"
#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/train/cli.hpp"

namespace llmrdzv::train {

std::vector<ConfigEntry> read_config_file(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path);  // a regular file: a directory or FIFO is refused, not waited on
  } catch (const io::IoError& e) {
    throw UsageError("config file '" + path + "' cannot be read: " + e.what());
  }
  YAML::Node root;
  try {
    root = load_yaml_document(text);
  } catch (const YamlDocumentError& e) {
    throw UsageError("config file '" + path + "': " + e.what());
  }
  if (root.IsNull()) return {};
  if (!root.IsMap()) {
    throw UsageError("config file '" + path + "' must be a mapping of option names to values");
  }
  std::vector<ConfigEntry> entries;
  std::set<std::string> seen;
  for (const auto& item : root) {
    const int line = item.first.Mark().line + 1;
    const std::string where = path + ":" + std::to_string(line);
    if (!item.first.IsScalar()) throw UsageError(where + ": option names must be plain words");
    const std::string key = item.first.Scalar();
    if (!seen.insert(key).second) throw UsageError(where + ": key '" + key + "' appears twice");
    if (item.second.IsNull()) throw UsageError(where + ": key '" + key + "' has no value");
    if (!item.second.IsScalar()) {
      throw UsageError(where + ": key '" + key + "' must be a single value, not a list or mapping");
    }
    entries.push_back({key, item.second.Scalar(), line});
  }
  return entries;
}

}  // namespace llmrdzv::train
