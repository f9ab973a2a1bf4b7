// Asks the SPANK plugin's own key tables which keys they know, so check_man_options.py can hold
// llm-rdzv(8) against them. Usage: plugin_keys_probe user|site KEY...
// Prints "listed NAME" for each key of the table (and "off" for the user option), then for each KEY
// "recognised KEY" or "unrecognised KEY": a key is recognised when a nonsense value for it is
// rejected for the value, not for the key.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "site_config.hpp"
#include "user_options.hpp"

namespace {

using llmrdzv::spank::ArgError;

constexpr std::string_view kUnknownKey = "llm_rdzv_probe_no_such_key";
constexpr std::string_view kNonsense = "\x01nonsense";

// The message the parser gives for `key=value`, or "" when it accepts it.
std::string parse_error(bool site, const std::string& text) {
  try {
    if (site) {
      llmrdzv::spank::parse_site_config({text}, "/usr/sbin/rdzvd", {1, 1});
    } else {
      llmrdzv::spank::parse_user_options(text.c_str());
    }
  } catch (const ArgError& e) {
    return e.what();
  }
  return {};
}

bool says_unknown(const std::string& message) {
  return message.starts_with("unknown key") || message.starts_with("unknown plugstack.conf argument");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  if (kind != "user" && kind != "site") {
    std::cerr << "usage: plugin_keys_probe user|site KEY...\n";
    return 2;
  }
  const bool site = kind == "site";
  if (!says_unknown(parse_error(site, std::string(kUnknownKey) + "=1"))) {
    std::cerr << "plugin_keys_probe: the parser accepts an unknown key\n";
    return 1;
  }
  if (site) {
    for (const auto& key : llmrdzv::spank::site_keys()) std::cout << "listed " << key.name << "\n";
  } else {
    for (const auto& key : llmrdzv::spank::user_keys()) std::cout << "listed " << key.name << "\n";
    std::cout << "listed off\n";
  }
  for (int i = 2; i < argc; ++i) {
    const std::string key = argv[i];
    const std::string text = !site && key == "off" ? key : key + "=" + std::string(kNonsense);
    const std::string error = parse_error(site, text);
    std::cout << (says_unknown(error) ? "unrecognised " : "recognised ") << key << "\n";
  }
  return 0;
}
