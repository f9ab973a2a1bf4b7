// Reads a `--config` YAML file into (key, value text) pairs. It knows nothing about which keys
// exist: the option table checks keys and parses values, so flags and YAML share one parser.
#pragma once

#include <string>
#include <vector>

namespace llmrdzv::train {

struct ConfigEntry {
  std::string key;
  std::string value;
  int line = 0;  // 1-based, for messages
};

// Throws UsageError when the file cannot be read, is not valid YAML, is not a mapping, or holds a
// value that is not a scalar (lists, nested maps, empty values).
std::vector<ConfigEntry> read_config_file(const std::string& path);

}  // namespace llmrdzv::train
