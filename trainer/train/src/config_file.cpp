// YAML `--config` files via yaml-cpp: a flat mapping of option names to scalars.
#include "config_file.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>

#include "llmrdzv/train/cli.hpp"

namespace llmrdzv::train {

std::vector<ConfigEntry> read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("config file '" + path + "' cannot be read");
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw UsageError("config file '" + path + "' is not valid YAML: " + e.what());
  }
  if (root.IsNull()) return {};
  if (!root.IsMap()) {
    throw UsageError("config file '" + path + "' must be a mapping of option names to values");
  }
  std::vector<ConfigEntry> entries;
  for (const auto& item : root) {
    const int line = item.first.Mark().line + 1;
    const std::string where = path + ":" + std::to_string(line);
    if (!item.first.IsScalar()) throw UsageError(where + ": option names must be plain words");
    const std::string key = item.first.Scalar();
    if (item.second.IsNull()) throw UsageError(where + ": key '" + key + "' has no value");
    if (!item.second.IsScalar()) {
      throw UsageError(where + ": key '" + key + "' must be a single value, not a list or mapping");
    }
    entries.push_back({key, item.second.Scalar(), line});
  }
  return entries;
}

}  // namespace llmrdzv::train
