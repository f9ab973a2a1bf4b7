// The one reader of the project's YAML config files (rdzvd --config, trainer --config): exactly
// one document, through yaml-cpp, without yaml-cpp's LoadAll. LoadAll (yaml-cpp 0.7, Debian 12)
// never returns on a ',' outside a flow collection (a file that starts with one, or has one on a
// line of its own after a block): the parser hands back an empty document without consuming the
// token, over and over, and LoadAll keeps them all until memory runs out. A daemon reloading its
// config on SIGHUP would hang with it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>

namespace llmrdzv {

// what(): "not valid YAML: <where and what>" or "holds N YAML documents; give one". Callers put
// the file's name in front.
class YamlDocumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The root of the one document in `text`; a null node for a text with no document (empty, or
// comments only).
YAML::Node load_yaml_document(const std::string& text);

}  // namespace llmrdzv
