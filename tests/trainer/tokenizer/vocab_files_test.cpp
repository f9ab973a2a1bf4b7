// Malformed vocab.json / merges.txt: each is rejected with an error naming the file, the line
// and the problem.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "scratch_dir.hpp"

using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::Tokenizer;
using llmrdzv::tokenizer::TokenizerError;

namespace {

// The byte tokenizer's vocab.json (257 entries, ids 0..256) as a valid starting point.
std::string byte_vocab_entries(const ScratchDir& scratch) {
  Tokenizer::bytes().save(scratch / "bytes");
  std::string text;
  std::ifstream(scratch / "bytes" / "vocab.json") >> text;  // one line, no spaces
  return text.substr(1, text.size() - 2);                   // without the braces
}

std::string load_error(const ScratchDir& scratch, const std::string& vocab, const std::string& merges) {
  const auto v = scratch.write("v.json", vocab);
  const auto m = scratch.write("m.txt", merges);
  try {
    Tokenizer::from_files(v, m);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("vocab.json problems name file and line", "[tokenizer][errors]") {
  ScratchDir scratch("tok-badvocab");
  const std::string entries = byte_vocab_entries(scratch);
  const std::string merges = "#version: 0.2\n";
  using Catch::Contains;
  CHECK_THAT(load_error(scratch, "{\n" + entries + ",\n\"ab\" 257}", merges), Contains("v.json:3:") && Contains("expected ':'"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":257", merges), Contains("expected '}' but the text ended"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":2.5}", merges), Contains("fraction"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":-1}", merges), Contains("out of range"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":256}", merges), Contains("id 256 is given to both"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\n\"!\":257}", merges), Contains("v.json:2:") && Contains("\"!\" appears twice"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":300}", merges), Contains("id 257 is missing"));
  CHECK_THAT(load_error(scratch, "{" + entries + "} trailing", merges), Contains("after the vocabulary object"));
  CHECK_THAT(load_error(scratch, "{}", merges), Contains("the vocabulary is empty"));
  CHECK_THAT(load_error(scratch, "{\"a\":0,\"b\":1}", merges), Contains("not a byte-level vocabulary: byte 0"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"\\ud800\":257}", merges), Contains("surrogate"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"\xff\":257}", merges), Contains("invalid UTF-8"));
  CHECK_THAT(load_error(scratch, "[1,2]", merges), Contains("expected '{'"));
  CHECK_THROWS_WITH(Tokenizer::from_directory(scratch / "missing"), Contains("cannot open") && Contains("vocab.json"));
}

TEST_CASE("merges.txt problems name file and line", "[tokenizer][errors]") {
  ScratchDir scratch("tok-badmerges");
  const std::string vocab = "{" + byte_vocab_entries(scratch) + ",\"ab\":257,\"abc\":258}";
  using Catch::Contains;
  CHECK(load_error(scratch, vocab, "#version: 0.2\na b\nab c\n") == "no error");
  CHECK_THAT(load_error(scratch, vocab, "#version: 0.2\na b\nabc\n"), Contains("m.txt:3:") && Contains("two tokens"));
  CHECK_THAT(load_error(scratch, vocab, "a b c\n"), Contains("m.txt:1:") && Contains("two tokens"));
  CHECK_THAT(load_error(scratch, vocab, "a  b\n"), Contains("two tokens"));
  CHECK_THAT(load_error(scratch, vocab, "a b\n\nab c\n"), Contains("m.txt:2:"));
  CHECK_THAT(load_error(scratch, vocab, "a xyz\n"), Contains("m.txt:1:") && Contains("\"xyz\" is not in the vocabulary"));
  CHECK_THAT(load_error(scratch, vocab, "b a\n"), Contains("merge result \"ba\" is not in the vocabulary"));
  CHECK_THAT(load_error(scratch, vocab, "a b\nab c\na b\n"), Contains("m.txt:3:") && Contains("duplicate merge") && Contains("line 1"));
}
