// Damaged tokenizer files (vocab.json, merges.txt, tokenizer.json, tokenizer_config.json,
// special_tokens_map.json) of every kind the trainer reads (GPT-2's byte-level BPE; Llama 3's and
// Llama 2's, trained small by transformers in the venv): the tokenizer refuses them with
// TokenizerError, and a tokenizer it builds from one still gives back every text it encodes.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "hf_oracle.hpp"
#include "parity_cases.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "scratch_dir.hpp"

using llmrdzv::testing::Broken;
using llmrdzv::testing::feed_damaged;
using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::Tokenizer;
using llmrdzv::tokenizer::TokenizerError;

namespace {

// The byte tokenizer's files as save() writes them, with one merge ("a b" -> "ab", id 257) added
// to the pair and to tokenizer.json, so that damage can reach the merge rules too.
std::map<std::string, std::string> seed_files() {
  std::map<std::string, std::string> files;
  for (auto& [name, content] : Tokenizer::bytes().files()) files[name] = content;
  auto add_entry = [](std::string& json, const std::string& before_brace) {
    const std::size_t at = json.find(before_brace);
    REQUIRE(at != std::string::npos);
    json.insert(at + before_brace.size() - 1, ", \"ab\": 257");
  };
  add_entry(files.at("vocab.json"), "\"<|endoftext|>\":256}");
  files.at("merges.txt") += "a b\n";
  std::string& tokenizer_json = files.at("tokenizer.json");
  const std::size_t vocab_end = tokenizer_json.find("\"<|endoftext|>\":256}");
  REQUIRE(vocab_end != std::string::npos);
  tokenizer_json.insert(vocab_end + std::string("\"<|endoftext|>\":256").size(), ",\"ab\":257");
  const std::size_t merges = tokenizer_json.find("\"merges\":[]");
  REQUIRE(merges != std::string::npos);
  tokenizer_json.replace(merges, std::string("\"merges\":[]").size(), "\"merges\":[[\"a\",\"b\"]]");
  return files;
}

// What a tokenizer that loaded must do: give back the text it encoded, every byte of it (a
// SentencePiece-style one with the leading space its "▁" prefix stands for).
void check_round_trip(const Tokenizer& tokenizer) {
  static const std::string text = "about ab cab\n\t<|endoftext|> caf\xc3\xa9 \xff\x00 end";
  std::vector<llmrdzv::tokenizer::TokenId> ids;
  try {
    ids = tokenizer.encode(text);
  } catch (const TokenizerError&) {
    return;  // refusing to encode with a vocabulary that lacks a byte is a clear outcome
  }
  for (const auto id : ids)
    if (id >= tokenizer.vocab_size()) throw Broken("an id past the vocabulary: " + std::to_string(id));
  std::string back = tokenizer.decode(ids);
  if (tokenizer.kind() == Tokenizer::Kind::sentencepiece_bpe && back.starts_with(' ') && back.substr(1) == text) back.erase(0, 1);
  if (back != text) throw Broken("decode(encode(text)) gives \"" + llmrdzv::testing::printable(back) + "\"");
}

}  // namespace

TEST_CASE("damaged vocab.json or merges.txt is refused with TokenizerError", "[malformed][tokenizer]") {
  ScratchDir scratch("malformed-pair");
  const auto files = seed_files();
  for (const std::string damaged : {"vocab.json", "merges.txt"}) {
    const std::string other = damaged == "vocab.json" ? "merges.txt" : "vocab.json";
    scratch.write(other, files.at(other));
    feed_damaged<TokenizerError>("Tokenizer::from_files, " + damaged, {files.at(damaged)}, 2500, [&](const std::string& text) {
      scratch.write(damaged, text);
      check_round_trip(Tokenizer::from_files(scratch / "vocab.json", scratch / "merges.txt"));
    });
  }
}

TEST_CASE("a damaged tokenizer.json is refused with TokenizerError", "[malformed][tokenizer]") {
  ScratchDir scratch("malformed-tokjson");
  const auto files = seed_files();
  feed_damaged<TokenizerError>("Tokenizer::from_tokenizer_json", {files.at("tokenizer.json")}, 2500, [&](const std::string& text) {
    check_round_trip(Tokenizer::from_tokenizer_json(scratch.write("tokenizer.json", text)));
  });
}

TEST_CASE("a damaged tokenizer_config.json or special_tokens_map.json beside vocab.json and merges.txt is refused with TokenizerError", "[malformed][tokenizer]") {
  ScratchDir scratch("malformed-tokconfig");
  const auto files = seed_files();
  for (const std::string name : {"vocab.json", "merges.txt"}) scratch.write(name, files.at(name));
  scratch.write("special_tokens_map.json", files.at("special_tokens_map.json"));
  feed_damaged<TokenizerError>("Tokenizer::from_directory, tokenizer_config.json", {files.at("tokenizer_config.json")}, 2500,
                               [&](const std::string& text) {
                                 scratch.write("tokenizer_config.json", text);
                                 check_round_trip(Tokenizer::from_directory(scratch.path()));
                               });
  // special_tokens_map.json is read when the config has no added_tokens_decoder (older files).
  scratch.write("tokenizer_config.json", "{\"tokenizer_class\": \"GPT2Tokenizer\", \"eos_token\": \"<|endoftext|>\"}");
  feed_damaged<TokenizerError>("Tokenizer::from_directory, special_tokens_map.json", {files.at("special_tokens_map.json")}, 2500,
                               [&](const std::string& text) {
                                 scratch.write("special_tokens_map.json", text);
                                 check_round_trip(Tokenizer::from_directory(scratch.path()));
                               });
}

TEST_CASE("a damaged tokenizer.json or tokenizer_config.json of Llama 3 or Llama 2 is refused with TokenizerError", "[malformed][tokenizer][hf]") {
  ScratchDir scratch("malformed-llama");
  const auto corpus = scratch.write("corpus.txt", llmrdzv::test::training_text());
  for (const std::string kind : {"llama3", "llama2", "llama2-hub"}) {
    const auto made = scratch / kind;
    llmrdzv::test::hf_encode(made, {"x"}, llmrdzv::test::OracleTraining{corpus, 400, true, false, kind}, true);
    const std::string dir = "damaged-" + kind;
    for (const std::string name : {"tokenizer.json", "tokenizer_config.json"}) {
      const std::string seed = llmrdzv::testing::read_file(made / name);
      for (const std::string other : {"tokenizer.json", "tokenizer_config.json"})
        scratch.write(dir + "/" + other, llmrdzv::testing::read_file(made / other));
      feed_damaged<TokenizerError>("Tokenizer::from_directory, " + kind + " " + name, {seed}, 600, [&](const std::string& text) {
        scratch.write(dir + "/" + name, text);
        check_round_trip(Tokenizer::from_directory(scratch / dir));
      });
    }
  }
}
