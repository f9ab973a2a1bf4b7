// `trainer tokenizer`'s training (train_tokenizer, what the subcommand runs) against HF tokenizers'
// ByteLevelBPETokenizer.train (hf_bpe_trainer_oracle.py in the project venv) on the same files:
// merges.txt equal line for line (the same merges in the same order) and vocab.json equal as a
// map, on corpora with Unicode, CJK, long whitespace, many ties and tokens two merges spell; the
// files it writes load in transformers' AutoTokenizer and encode as our Tokenizer does; bad input
// is refused naming the problem.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "corpus_text.hpp"
#include "hf_oracle.hpp"
#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "llmrdzv/train/cli.hpp"
#include "llmrdzv/train/tokenizer_training.hpp"
#include "scratch_dir.hpp"

namespace {

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using llmrdzv::train::TokenizerOptions;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// HF's vocab.json and merges.txt for these inputs, in dir.
void hf_train(const std::filesystem::path& dir, const std::vector<std::string>& inputs, const TokenizerOptions& o) {
  std::string command = std::string("RAYON_NUM_THREADS=2 ") + LLMRDZV_TEST_PYTHON + " " + LLMRDZV_BPE_TRAINER_ORACLE + " " +
                        quoted(dir.string()) + " --vocab-size " + std::to_string(o.vocab_size) + " --min-frequency " +
                        std::to_string(o.min_frequency);
  for (const std::string& s : llmrdzv::train::special_token_list(o)) command += " --special " + quoted(s);
  for (const std::string& input : inputs) command += " " + quoted(input);
  REQUIRE(std::system(command.c_str()) == 0);
}

std::map<std::string, std::int64_t> vocab_map(const std::filesystem::path& file) {
  std::map<std::string, std::int64_t> vocab;
  const llmrdzv::json::Value parsed = llmrdzv::json::parse(read_file(file));
  for (const auto& [token, id] : parsed.as_object()) vocab[token] = id.as_integer();
  return vocab;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Trains ours (output_dir "ours") and HF's ("hf") on `inputs` (files in scratch; a folder's files
// in path order for HF) and requires the same merges and vocabulary.
void require_parity(const ScratchDir& scratch, const std::string& train_file, const std::vector<std::string>& hf_inputs,
                    TokenizerOptions options) {
  options.train_file = train_file;
  options.output_dir = scratch.file("ours");
  const auto result = llmrdzv::train::train_tokenizer(options, nullptr);
  hf_train(scratch / "hf", hf_inputs, options);
  const std::vector<std::string> ours = lines(read_file(scratch / "ours" / "merges.txt"));
  const std::vector<std::string> theirs = lines(read_file(scratch / "hf" / "merges.txt"));
  CAPTURE(options.vocab_size, options.min_frequency, options.special_tokens, ours.size(), theirs.size());
  for (std::size_t i = 0; i < std::min(ours.size(), theirs.size()); ++i) {
    CAPTURE(i);
    REQUIRE(ours[i] == theirs[i]);
  }
  REQUIRE(ours.size() == theirs.size());
  REQUIRE(result.merges + 1 == ours.size());  // and "#version: 0.2"
  REQUIRE(vocab_map(scratch / "ours" / "vocab.json") == vocab_map(scratch / "hf" / "vocab.json"));
}

// Text over a few letters, so pairs tie often and longer tokens can be spelled by two merges.
std::string few_letters_text(std::uint32_t seed, std::size_t words) {
  std::uint64_t state = seed;
  std::string text;
  for (std::size_t i = 0; i < words; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t length = 1 + (state >> 33) % 7;
    if (i > 0) text += (state >> 40) % 11 == 0 ? "\n" : " ";
    for (std::size_t j = 0; j < length; ++j) text += "abc"[(state >> (3 * j + 5)) % 3];
  }
  return text;
}

std::string cjk_and_whitespace_text() {
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "東京都の天気は晴れです。今日は" + std::to_string(i % 7) + "月です\n";
    text += "    def f(x):\n        return x  \t  \n\n\n";
    text += std::string(static_cast<std::size_t>(3 + i % 13), ' ') + "字 句\u3000全角 Ünïcödé ελληνικά русский 🙂🙃\r\n";
    text += "a  b   c    d\t\t\te\n" + std::string(static_cast<std::size_t>(i % 5), '\n');
  }
  return text;
}

}  // namespace

TEST_CASE("trained merges and vocabulary equal HF's ByteLevelBPETokenizer on prose with Unicode", "[tokenizer][bpe_training]") {
  const auto setting = GENERATE(std::pair{300, 2}, std::pair{600, 0}, std::pair{1000, 2}, std::pair{5000, 5});
  ScratchDir scratch("bpe-train");
  const std::string file = scratch.write("corpus.txt", llmrdzv::test::corpus_text(7, 3000));
  TokenizerOptions options;
  options.vocab_size = setting.first;
  options.min_frequency = setting.second;
  require_parity(scratch, file, {file}, options);
}

TEST_CASE("trained merges equal HF's on CJK, long whitespace and CRLF lines", "[tokenizer][bpe_training]") {
  const int vocab_size = GENERATE(400, 2000);
  ScratchDir scratch("bpe-train");
  const std::string file = scratch.write("cjk.txt", cjk_and_whitespace_text());
  TokenizerOptions options;
  options.vocab_size = vocab_size;
  options.min_frequency = 1;
  options.special_tokens = "<|endoftext|> <pad> <|im_start|>";
  require_parity(scratch, file, {file}, options);
}

TEST_CASE("trained merges equal HF's where counts tie and two merges spell one token", "[tokenizer][bpe_training]") {
  const auto setting = GENERATE(std::pair{1u, 400}, std::pair{2u, 2000}, std::pair{3u, 8000});
  ScratchDir scratch("bpe-train");
  const std::string file = scratch.write("abc.txt", few_letters_text(setting.first, 20000));
  TokenizerOptions options;
  options.vocab_size = setting.second;
  options.min_frequency = 0;
  options.threads = 3;
  require_parity(scratch, file, {file}, options);
}

TEST_CASE("a folder of text and JSON Lines files trains as HF does on the same sequences", "[tokenizer][bpe_training]") {
  ScratchDir scratch("bpe-train");
  const std::string a = scratch.write("corpus/a.txt", llmrdzv::test::corpus_text(3, 500));
  const std::string b = scratch.write("corpus/b.jsonl", "{\"text\": \"first  document\\n  indented line\\nno newline at end\"}\n\n"
                                                        "{\"text\": \"second\\r\\n document \\u00e9t\\u00e9\"}\n");
  const std::string c = scratch.write("corpus/c/d.txt", cjk_and_whitespace_text());
  TokenizerOptions options;
  options.vocab_size = 700;
  require_parity(scratch, scratch.file("corpus"), {a, b, c}, options);
}

TEST_CASE("the Python documentation trains to HF's merges", "[tokenizer][bpe_training]") {
  const std::filesystem::path docs = "/usr/share/doc/python3.11/html/_sources/tutorial";
  REQUIRE(std::filesystem::is_directory(docs));  // python3.11-doc, which scripts/setup.sh installs
  ScratchDir scratch("bpe-train");
  const llmrdzv::data::SourceList sources = llmrdzv::data::list_sources(docs);
  std::vector<std::string> files;
  for (const auto& f : sources.files) files.push_back(f.path.string());
  TokenizerOptions options;
  options.vocab_size = 4096;
  require_parity(scratch, docs.string(), files, options);
}

TEST_CASE("counting words on several threads trains the same files as on one", "[tokenizer][bpe_training]") {
  ScratchDir scratch("bpe-train");
  std::string text;
  for (std::uint32_t seed = 0; seed < 40; ++seed) text += llmrdzv::test::corpus_text(seed, 400);  // several batches
  const std::string file = scratch.write("corpus.txt", text);
  TokenizerOptions options;
  options.train_file = file;
  options.vocab_size = 800;
  options.threads = 1;
  options.output_dir = scratch.file("one");
  llmrdzv::train::train_tokenizer(options, nullptr);
  options.threads = 4;
  options.output_dir = scratch.file("four");
  llmrdzv::train::train_tokenizer(options, nullptr);
  for (const char* name : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"}) {
    CAPTURE(name);
    REQUIRE(read_file(scratch / "one" / name) == read_file(scratch / "four" / name));
  }
}

TEST_CASE("a trained tokenizer loads in AutoTokenizer and in the trainer and both encode alike", "[tokenizer][bpe_training]") {
  const std::string specials = GENERATE(std::string("<|endoftext|>"), std::string("</s> <pad> <unk>"));
  ScratchDir scratch("bpe-train");
  TokenizerOptions options;
  options.train_file = scratch.write("corpus.txt", llmrdzv::test::corpus_text(11, 2000) + cjk_and_whitespace_text());
  options.output_dir = scratch.file("tok");
  options.vocab_size = 1200;
  options.special_tokens = specials;
  llmrdzv::train::train_tokenizer(options, nullptr);

  const std::vector<std::string> cases = {
      "the rank world café", "    indented block\n\n  x", "東京都の天気は晴れです。", "emoji😀 tab\tstop 12345",
      "a <pad> b </s>c<|endoftext|>", "", "  \n\t\r\n  trailing   "};
  const auto ours = llmrdzv::tokenizer::Tokenizer::from_directory(options.output_dir);
  const llmrdzv::test::OracleResult hf = llmrdzv::test::hf_encode(options.output_dir, cases);
  CHECK(hf.loader == "GPT2Tokenizer");  // transformers 5: backed by tokenizers
  CHECK(hf.eos == ours.eos_id());
  CHECK(hf.eos == 0);
  CHECK(hf.vocab_size == ours.vocab_size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i]);
    CHECK(ours.encode(cases[i]) == hf.ids[i]);
  }
}

TEST_CASE("bad tokenizer training input is refused naming the problem", "[tokenizer][bpe_training]") {
  ScratchDir scratch("bpe-train");
  TokenizerOptions options;
  options.output_dir = scratch.file("out");
  options.train_file = scratch.write("ok.txt", "some text\n");

  SECTION("a vocabulary smaller than the bytes and special tokens") {
    options.vocab_size = 256;
    REQUIRE_THROWS_WITH(llmrdzv::train::train_tokenizer(options, nullptr),
                        Catch::Contains("vocabulary size 256 is smaller than the 257 tokens"));
  }
  SECTION("text that is not UTF-8") {
    options.train_file = scratch.write("bad.txt", "fine line\nsecond \xff\xfe line\n");
    REQUIRE_THROWS_WITH(llmrdzv::train::train_tokenizer(options, nullptr),
                        Catch::Contains("bad.txt:2: not UTF-8 (byte 0xFF at column 8)"));
  }
  SECTION("a missing file") {
    options.train_file = scratch.file("missing.txt");
    REQUIRE_THROWS_WITH(llmrdzv::train::train_tokenizer(options, nullptr), Catch::Contains("missing.txt"));
  }
  SECTION("a file that cannot be read as text") {
    options.train_file = "/dev/null";
    REQUIRE_THROWS_WITH(llmrdzv::train::train_tokenizer(options, nullptr), Catch::Contains("/dev/null: not a regular file"));
  }
  SECTION("a folder without text") {
    scratch.write("corpus/.hidden", "text\n");
    options.train_file = scratch.file("corpus");
    REQUIRE_THROWS_WITH(llmrdzv::train::train_tokenizer(options, nullptr), Catch::Contains("holds no text files"));
  }
  REQUIRE_FALSE(std::filesystem::exists(scratch / "out" / "vocab.json"));
}
