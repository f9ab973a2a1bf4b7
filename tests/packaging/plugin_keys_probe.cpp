// Asks the SPANK plugin's own parsers which keys they know, so check_man_options.py can hold
// llm-rdzv(8) against them. Usage: plugin_keys_probe user|site KEY...
// Prints "listed NAME" for each key the parser's unknown-key message lists, then for each KEY
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

// "... (known: a, b, c; or the single word off)" → a b c off
std::vector<std::string> listed_keys(const std::string& message) {
  const auto start = message.find("(known: ");
  const auto end = message.rfind(')');
  if (start == std::string::npos || end == std::string::npos || end < start) return {};
  std::string list = message.substr(start + 8, end - start - 8);
  std::vector<std::string> keys;
  std::string word;
  for (const char c : list + ",") {
    if (c == ',' || c == ';') {
      if (word.starts_with("or the single word ")) word = word.substr(19);
      if (!word.empty()) keys.push_back(word);
      word.clear();
    } else if (c != ' ' || !word.empty()) {
      word += c;
    }
  }
  return keys;
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
  const std::string unknown = parse_error(site, std::string(kUnknownKey) + "=1");
  const auto listed = listed_keys(unknown);
  if (!says_unknown(unknown) || listed.empty()) {
    std::cerr << "plugin_keys_probe: the parser's unknown-key message lists no keys: '" << unknown << "'\n";
    return 1;
  }
  for (const auto& key : listed) std::cout << "listed " << key << "\n";
  for (int i = 2; i < argc; ++i) {
    const std::string key = argv[i];
    const std::string text = !site && key == "off" ? key : key + "=" + std::string(kNonsense);
    const std::string error = parse_error(site, text);
    std::cout << (says_unknown(error) ? "unrecognised " : "recognised ") << key << "\n";
  }
  return 0;
}
