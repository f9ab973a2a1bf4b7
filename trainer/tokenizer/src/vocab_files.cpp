// vocab.json / merges.txt reading with validation, and writing (see vocab_files.hpp).
#include "vocab_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr std::int64_t kMaxVocab = std::int64_t{1} << 30;

std::unordered_map<std::string_view, std::uint32_t> index_tokens(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string_view, std::uint32_t> index;
  index.reserve(tokens.size());
  for (std::uint32_t id = 0; id < tokens.size(); ++id) index.emplace(tokens[id], id);
  return index;
}


}  // namespace

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError("cannot open " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw TokenizerError("cannot read " + path.string());
  return std::move(buffer).str();
}

json::Value parse_json_file(const std::filesystem::path& path, const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::ParseError& e) {
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(e.offset()), '\n'));
    throw TokenizerError(path.string() + ":" + std::to_string(line) + ": not valid JSON: " + e.what());
  }
}

std::vector<std::string> vocab_from_json(const json::Value& vocab, const std::string& where) {
  if (!vocab.is_object()) {
    throw TokenizerError(where + ": expected an object of token -> id, got " + std::string(vocab.kind_name()));
  }
  // Ids are 0..N-1 for N tokens: a larger id is refused before anything is sized by it, and with
  // no id given twice (below) none is missing either.
  const auto count = static_cast<std::int64_t>(std::min<std::size_t>(vocab.as_object().size(), kMaxVocab));
  std::vector<std::string> tokens(static_cast<std::size_t>(count));
  for (const auto& [token, id_value] : vocab.as_object()) {  // the reader refused duplicate tokens
    const std::string what = where + ": token \"" + token + "\"";
    if (!id_value.is_integer()) throw TokenizerError(what + ": its id is not a whole number");
    const std::int64_t id = id_value.as_integer();
    if (id < 0 || id >= count) {
      throw TokenizerError(what + ": id " + std::to_string(id) + " is out of range 0.." + std::to_string(count - 1) +
                           " (ids run 0..N-1 for the vocabulary's " + std::to_string(vocab.as_object().size()) + " tokens)");
    }
    if (token.empty()) throw TokenizerError(where + ": empty token string (id " + std::to_string(id) + ")");
    const auto index = static_cast<std::size_t>(id);
    if (!tokens[index].empty()) {
      throw TokenizerError(where + ": id " + std::to_string(id) + " is given to both \"" + tokens[index] + "\" and \"" + token + "\"");
    }
    tokens[index] = token;
  }
  if (tokens.empty()) throw TokenizerError(where + ": the vocabulary is empty");
  return tokens;
}

std::vector<MergeRule> resolve_merges(const std::vector<MergeSpelling>& spellings, const std::vector<std::string>& tokens) {
  const auto index = index_tokens(tokens);
  std::unordered_map<std::uint64_t, std::size_t> first_of_pair;
  std::vector<MergeRule> merges;
  merges.reserve(spellings.size());
  for (std::size_t rank = 0; rank < spellings.size(); ++rank) {
    const MergeSpelling& m = spellings[rank];
    const auto fail = [&](const std::string& message) { throw TokenizerError(m.where + ": " + message); };
    const auto left_it = index.find(m.left);
    const auto right_it = index.find(m.right);
    if (left_it == index.end() || right_it == index.end()) {
      fail("token \"" + std::string(left_it == index.end() ? m.left : m.right) + "\" is not in the vocabulary");
    }
    const std::string merged = std::string(m.left) + std::string(m.right);
    const auto merged_it = index.find(merged);
    if (merged_it == index.end()) fail("the merge result \"" + merged + "\" is not in the vocabulary");
    const std::uint64_t key = (std::uint64_t{left_it->second} << 32) | right_it->second;
    if (const auto [it, inserted] = first_of_pair.emplace(key, rank); !inserted) {
      fail("duplicate merge \"" + std::string(m.left) + " " + std::string(m.right) + "\" (first at " +
           spellings[it->second].short_where + ")");
    }
    merges.push_back({left_it->second, right_it->second, merged_it->second});
  }
  return merges;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw TokenizerError("cannot write " + path.string() + ": " + std::strerror(errno));
}

std::vector<std::string> read_vocab_json(const std::filesystem::path& path) {
  const std::string text = read_whole_file(path);
  return vocab_from_json(parse_json_file(path, text), path.string());
}

std::vector<MergeRule> read_merges_txt(const std::filesystem::path& path, const std::vector<std::string>& tokens) {
  const std::string text = read_whole_file(path);
  std::vector<MergeSpelling> spellings;
  std::size_t line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_number == 1 && line.starts_with("#version")) continue;
    const std::string where = path.string() + ":" + std::to_string(line_number);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      throw TokenizerError(where + ": expected two tokens separated by one space, got \"" + std::string(line) + "\"");
    }
    spellings.push_back({line.substr(0, space), line.substr(space + 1), where, "line " + std::to_string(line_number)});
  }
  return resolve_merges(spellings, tokens);
}

std::string vocab_json_text(const std::vector<std::string>& tokens) {
  json::Object vocab;
  vocab.reserve(tokens.size());
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab.emplace_back(tokens[id], static_cast<std::int64_t>(id));
  return json::write(vocab) + "\n";
}

std::string merges_txt_text(const std::vector<std::string>& tokens, const std::vector<MergeRule>& merges) {
  std::string text = "#version: 0.2\n";
  for (const MergeRule& m : merges) text += tokens[m.left] + " " + tokens[m.right] + "\n";
  return text;
}

std::vector<std::pair<std::string, std::string>> tokenizer_config_files(const std::vector<SpecialToken>& specials) {
  const json::Value eos = specials.at(0).content;
  json::Object decoder;
  json::Array extra;
  for (const SpecialToken& t : specials) {
    decoder.emplace_back(std::to_string(t.id), json::Object{{"content", t.content}, {"lstrip", false}, {"normalized", true},
                                                            {"rstrip", false}, {"single_word", false}, {"special", true}});
    if (&t != &specials.front()) extra.emplace_back(t.content);
  }
  json::Object config{{"tokenizer_class", "GPT2Tokenizer"}, {"add_prefix_space", false}, {"add_bos_token", false},
                      {"errors", "replace"},  {"clean_up_tokenization_spaces", false},
                      {"bos_token", eos},     {"eos_token", eos},     {"unk_token", eos}};
  json::Object map{{"bos_token", eos}, {"eos_token", eos}, {"unk_token", eos}};
  if (!extra.empty()) {
    config.emplace_back("extra_special_tokens", extra);
    map.emplace_back("additional_special_tokens", std::move(extra));
  }
  config.emplace_back("added_tokens_decoder", std::move(decoder));
  return {{"tokenizer_config.json", json::write(config) + "\n"}, {"special_tokens_map.json", json::write(map) + "\n"}};
}

}  // namespace llmrdzv::tokenizer
