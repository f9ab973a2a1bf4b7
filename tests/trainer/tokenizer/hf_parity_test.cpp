// Our tokenizer against Hugging Face's GPT-2 tokenizer on vocabularies trained for the test:
// hand-picked hard text and thousands of random strings built from the characters GPT-2's
// pattern treats specially, with and without "<|endoftext|>" in the vocabulary, plus the byte
// tokenizer's exported files loaded by HF.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "hf_oracle.hpp"
#include "parity_cases.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "scratch_dir.hpp"

using llmrdzv::test::hf_encode;
using llmrdzv::test::OracleTraining;
using llmrdzv::test::hard_cases;
using llmrdzv::test::random_cases;
using llmrdzv::test::training_text;
using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::TokenId;
using llmrdzv::tokenizer::Tokenizer;

namespace {

void expect_same(const Tokenizer& ours, const std::vector<std::string>& cases,
                 const std::vector<std::vector<std::uint32_t>>& theirs) {
  REQUIRE(theirs.size() == cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": \"" << cases[i] << "\"");
    CHECK(ours.encode(cases[i]) == theirs[i]);
    const std::vector<TokenId> ids = ours.encode(cases[i]);
    CHECK(ours.decode(ids) == cases[i]);
  }
}

}  // namespace

TEST_CASE("GPT-2 BPE encodes hard and random text exactly as HF does", "[tokenizer][hf]") {
  ScratchDir scratch("tok-hf");
  std::vector<std::string> cases = hard_cases();
  for (std::string& c : random_cases(3000, 1234)) cases.push_back(std::move(c));
  const auto theirs = hf_encode(scratch / "vocab", cases,
                                OracleTraining{scratch.write("corpus.txt", training_text()), 600, true});
  const Tokenizer ours = Tokenizer::from_directory(scratch / "vocab");
  CHECK(ours.kind() == Tokenizer::Kind::gpt2_bpe);
  CHECK(ours.eos_id() == theirs.eos);
  CHECK(ours.vocab_size() == theirs.vocab_size);
  expect_same(ours, cases, theirs.ids);
  // The trained vocabulary really merges: most hard cases take fewer tokens than bytes.
  CHECK(ours.encode("The quick brown fox").size() <= 8);  // of 19 bytes
}

TEST_CASE("a vocabulary without <|endoftext|> gets EOS as the next id, as in HF", "[tokenizer][hf]") {
  ScratchDir scratch("tok-hf-noeos");
  const std::vector<std::string> cases = {"a<|endoftext|>b", "it's 42 \xff", "Hello world"};
  const auto theirs = hf_encode(scratch / "vocab", cases,
                                OracleTraining{scratch.write("corpus.txt", training_text()), 400, false});
  const Tokenizer ours = Tokenizer::from_directory(scratch / "vocab");
  CHECK(ours.eos_id() == theirs.eos);
  CHECK(ours.eos_id() + 1 == ours.vocab_size());
  CHECK(ours.vocab_size() == theirs.vocab_size);
  expect_same(ours, cases, theirs.ids);
}

TEST_CASE("the byte tokenizer's exported files encode the same in HF's AutoTokenizer", "[tokenizer][hf]") {
  ScratchDir scratch("tok-hf-bytes");
  const Tokenizer bytes = Tokenizer::bytes();
  bytes.save(scratch / "vocab");
  std::vector<std::string> cases = hard_cases();
  for (std::string& c : random_cases(300, 99)) cases.push_back(std::move(c));
  const auto theirs = hf_encode(scratch / "vocab", cases);
  CHECK_THAT(theirs.loader, Catch::StartsWith("GPT2Tokenizer"));  // AutoTokenizer, from our tokenizer_config.json
  CHECK(theirs.eos == 256);
  CHECK(theirs.vocab_size == 257);
  expect_same(bytes, cases, theirs.ids);
}

TEST_CASE("a trained vocabulary saved by us loads in AutoTokenizer with the same encoding and EOS",
          "[tokenizer][hf]") {
  ScratchDir scratch("tok-hf-resave");
  std::vector<std::string> cases = hard_cases();
  for (std::string& c : random_cases(300, 7)) cases.push_back(std::move(c));
  hf_encode(scratch / "trained", {"x"}, OracleTraining{scratch.write("corpus.txt", training_text()), 500, true});
  const Tokenizer ours = Tokenizer::from_directory(scratch / "trained");
  ours.save(scratch / "exported");
  const auto theirs = hf_encode(scratch / "exported", cases);
  CHECK_THAT(theirs.loader, Catch::StartsWith("GPT2Tokenizer"));
  CHECK(theirs.eos == ours.eos_id());
  CHECK(theirs.vocab_size == ours.vocab_size());
  expect_same(ours, cases, theirs.ids);
  // Our tokenizer.json alone (as a transformers 5 user's directory has it) encodes the same in HF.
  std::filesystem::remove(scratch / "exported" / "vocab.json");
  std::filesystem::remove(scratch / "exported" / "merges.txt");
  const auto from_json = hf_encode(scratch / "exported", cases);
  CHECK(from_json.eos == ours.eos_id());
  CHECK(from_json.ids == theirs.ids);
}

TEST_CASE("tokenizer.json as transformers 5 saves it alone encodes exactly as HF does", "[tokenizer][hf][tokenizer_json]") {
  ScratchDir scratch("tok-hf-json");
  std::vector<std::string> cases = hard_cases();
  for (std::string& c : random_cases(1000, 31)) cases.push_back(std::move(c));
  hf_encode(scratch / "trained", {"x"}, OracleTraining{scratch.write("corpus.txt", training_text()), 600, true});
  llmrdzv::test::hf_resave(scratch / "trained", scratch / "saved");
  REQUIRE(std::filesystem::exists(scratch / "saved" / "tokenizer.json"));
  REQUIRE_FALSE(std::filesystem::exists(scratch / "saved" / "vocab.json"));
  const auto theirs = hf_encode(scratch / "saved", cases);  // AutoTokenizer reading that tokenizer.json
  CHECK(Tokenizer::directory_tokenizer_files(scratch / "saved") == "tokenizer.json + tokenizer_config.json");
  const Tokenizer ours = Tokenizer::from_directory(scratch / "saved");
  CHECK(ours.eos_id() == theirs.eos);
  CHECK(ours.vocab_size() == theirs.vocab_size);
  CHECK(ours.fingerprint() == Tokenizer::from_directory(scratch / "trained").fingerprint());
  expect_same(ours, cases, theirs.ids);
}
