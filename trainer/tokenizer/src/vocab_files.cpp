// vocab.json / merges.txt reading with validation, and writing (see vocab_files.hpp).
#include "vocab_files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "llmrdzv/tokenizer/json_cursor.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr std::int64_t kMaxVocab = std::int64_t{1} << 30;

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError("cannot open " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw TokenizerError("cannot read " + path.string());
  return std::move(buffer).str();
}

[[noreturn]] void fail_at(const std::filesystem::path& path, std::size_t line, const std::string& message) {
  throw TokenizerError(path.string() + ":" + std::to_string(line) + ": " + message);
}

std::unordered_map<std::string_view, std::uint32_t> index_tokens(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string_view, std::uint32_t> index;
  index.reserve(tokens.size());
  for (std::uint32_t id = 0; id < tokens.size(); ++id) index.emplace(tokens[id], id);
  return index;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw TokenizerError("cannot write " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

std::vector<std::string> read_vocab_json(const std::filesystem::path& path) {
  const std::string text = read_whole_file(path);
  std::vector<std::string> tokens;
  std::unordered_map<std::string, std::size_t> line_of_token;
  // Lines are counted incrementally: rescanning from the start per entry is quadratic (GPT-2's
  // vocab.json is one 1 MB line of 50257 entries).
  std::size_t counted_to = 0;
  std::size_t counted_line = 1;
  try {
    JsonCursor cursor(text);
    cursor.expect('{');
    if (!cursor.consume('}')) {
      do {
        cursor.skip_whitespace();
        const std::size_t entry_offset = cursor.offset();
        std::string token = cursor.read_string();
        cursor.expect(':');
        const std::int64_t id = cursor.read_integer();
        counted_line += line_of_offset(std::string_view(text).substr(counted_to), entry_offset - counted_to) - 1;
        counted_to = entry_offset;
        const std::size_t line = counted_line;
        if (id < 0 || id >= kMaxVocab) {
          fail_at(path, line, "id " + std::to_string(id) + " of token \"" + token + "\" is out of range 0.." +
                                  std::to_string(kMaxVocab - 1));
        }
        const auto index = static_cast<std::size_t>(id);
        if (index >= tokens.size()) tokens.resize(index + 1);
        if (!tokens[index].empty() || line_of_token.contains(token)) {
          fail_at(path, line,
                  line_of_token.contains(token)
                      ? "token \"" + token + "\" appears twice (first on line " +
                            std::to_string(line_of_token[token]) + ")"
                      : "id " + std::to_string(id) + " is given to both \"" + tokens[index] + "\" and \"" + token + "\"");
        }
        if (token.empty()) fail_at(path, line, "empty token string");
        line_of_token.emplace(token, line);
        tokens[index] = std::move(token);
      } while (cursor.consume(','));
      cursor.expect('}');
    }
    if (!cursor.at_end()) cursor.fail("unexpected characters after the vocabulary object");
  } catch (const JsonSyntaxError& e) {
    fail_at(path, line_of_offset(text, e.offset()), std::string("not valid JSON: ") + e.what());
  }
  if (tokens.empty()) throw TokenizerError(path.string() + ": the vocabulary is empty");
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty()) {
      throw TokenizerError(path.string() + ": ids must be 0.." + std::to_string(tokens.size() - 1) +
                           " without gaps, but id " + std::to_string(id) + " is missing");
    }
  }
  return tokens;
}

std::vector<MergeRule> read_merges_txt(const std::filesystem::path& path, const std::vector<std::string>& tokens) {
  const std::string text = read_whole_file(path);
  const auto index = index_tokens(tokens);
  std::unordered_map<std::uint64_t, std::size_t> line_of_pair;
  std::vector<MergeRule> merges;
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
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      fail_at(path, line_number, "expected two tokens separated by one space, got \"" + std::string(line) + "\"");
    }
    const std::string_view left = line.substr(0, space);
    const std::string_view right = line.substr(space + 1);
    const auto left_it = index.find(left);
    const auto right_it = index.find(right);
    if (left_it == index.end() || right_it == index.end()) {
      fail_at(path, line_number,
              "token \"" + std::string(left_it == index.end() ? left : right) + "\" is not in the vocabulary");
    }
    const std::string merged = std::string(left) + std::string(right);
    const auto merged_it = index.find(merged);
    if (merged_it == index.end()) {
      fail_at(path, line_number, "the merge result \"" + merged + "\" is not in the vocabulary");
    }
    const std::uint64_t key = (std::uint64_t{left_it->second} << 32) | right_it->second;
    if (const auto [it, inserted] = line_of_pair.emplace(key, line_number); !inserted) {
      fail_at(path, line_number, "duplicate merge \"" + std::string(line) + "\" (first on line " +
                                     std::to_string(it->second) + ")");
    }
    merges.push_back({left_it->second, right_it->second, merged_it->second});
  }
  return merges;
}

void write_vocab_json(const std::filesystem::path& path, const std::vector<std::string>& tokens) {
  std::string text = "{";
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    if (id > 0) text += ",";
    append_json_string(text, tokens[id]);
    text += ":" + std::to_string(id);
  }
  text += "}\n";
  write_text(path, text);
}

void write_merges_txt(const std::filesystem::path& path, const std::vector<std::string>& tokens,
                      const std::vector<MergeRule>& merges) {
  std::string text = "#version: 0.2\n";
  for (const MergeRule& m : merges) text += tokens[m.left] + " " + tokens[m.right] + "\n";
  write_text(path, text);
}

void write_tokenizer_config(const std::filesystem::path& dir, std::uint32_t eos) {
  const std::string eot = "\"<|endoftext|>\"";
  write_text(dir / "tokenizer_config.json",
             "{\n"
             "  \"tokenizer_class\": \"GPT2Tokenizer\",\n"
             "  \"add_prefix_space\": false,\n"
             "  \"add_bos_token\": false,\n"
             "  \"errors\": \"replace\",\n"
             "  \"clean_up_tokenization_spaces\": false,\n"
             "  \"bos_token\": " + eot + ",\n  \"eos_token\": " + eot + ",\n  \"unk_token\": " + eot + ",\n"
             "  \"added_tokens_decoder\": {\n"
             "    \"" + std::to_string(eos) + "\": {\"content\": " + eot +
             ", \"lstrip\": false, \"normalized\": true, \"rstrip\": false, \"single_word\": false, "
             "\"special\": true}\n"
             "  }\n"
             "}\n");
  write_text(dir / "special_tokens_map.json",
             "{\"bos_token\": " + eot + ", \"eos_token\": " + eot + ", \"unk_token\": " + eot + "}\n");
}

}  // namespace llmrdzv::tokenizer
