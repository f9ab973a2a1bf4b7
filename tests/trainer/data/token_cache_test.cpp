// The token stream and token cache: chunked encoding equals HF's whole-document encoding, shards
// are reused, rebuilt when inputs or tokenizer change, rejected when corrupt, and read back
// exactly across shard boundaries; ranks building one cache at once tokenise it once; shards of an
// older format version are rebuilt, never misread.
#include <catch2/catch.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "corpus_text.hpp"
#include "hf_oracle.hpp"
#include "llmrdzv/data/token_cache.hpp"
#include "llmrdzv/data/token_stream.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv::data;
using llmrdzv::test::corpus_text;
using llmrdzv::testing::flip_byte;
using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::TokenId;
using llmrdzv::tokenizer::Tokenizer;

namespace {

std::vector<TokenId> stream_all(const SourceList& sources, const Tokenizer& tokenizer, std::size_t chunk_bytes,
                                DocumentSelection selection = {}) {
  DocumentTokenStream stream(sources, selection, tokenizer, chunk_bytes);
  std::vector<TokenId> ids;
  while (stream.next(ids)) {
  }
  return ids;
}

std::vector<TokenId> store_all(const TokenStore& store) {
  std::vector<TokenId> ids(store.size());
  store.read(0, ids);
  return ids;
}

}  // namespace

TEST_CASE("chunked stream encoding equals HF's encoding of each whole document, BOS before and EOS after each") {
  ScratchDir dir("stream");
  // Whitespace runs before line breaks, CRLF, tabs and Unicode spaces: where a cut after any
  // line break would change the pieces.
  std::string ragged;
  for (int i = 0; i < 120; ++i) {
    ragged += (i % 4 == 0 ? "end of line \n\n\nNext" : i % 4 == 1 ? "crlf\r\nline" : i % 4 == 2 ? "tab\t\tx  \n y"
                                                                                        : "\xe3\x80\x80wide \xc2\xa0nbsp\n");
    ragged += std::to_string(i) + (i % 9 == 0 ? "\n" : " ");
  }
  // Combining marks right after the places a chunk may be cut (after a line break, before a
  // space), where NFC (Qwen2's normalizer) must not join across the cut.
  std::string marks;
  for (int i = 0; i < 80; ++i) marks += "cafe\xcc\x81 na\xcc\x88ive\n\xcc\x81x a\xcc\x81\xcc\xa3 \xcc\x81 e\xcc\x81\n";
  // Chat tokens with spaces beside them, which Phi-3's take along (rstrip after "<|end|>" and the
  // others, lstrip before the placeholders): a chunk cut in those spaces would keep them.
  std::string chat;
  for (int i = 0; i < 60; ++i) {
    chat += "<|user|> question " + std::to_string(i) + "<|end|> <|assistant|> answer with words <|placeholder2|> and" +
            (i % 2 ? " <|placeholder1|> more\n" : "<|end|>\n");
  }
  const std::vector<std::string> docs = {corpus_text(2, 400), corpus_text(3, 50), "short doc", ragged, marks, chat};
  // The vocabulary learns those whitespace runs, so a wrong cut would change the ids, not only the pieces.
  const auto train_corpus = dir.write("train-vocab.txt", corpus_text(1, 3000) + ragged + ragged);
  dir.write("docs/0.txt", docs[0]);
  dir.write("docs/1.txt", docs[1]);
  dir.write("docs/2.txt", docs[2]);
  dir.write("docs/3.txt", docs[3]);
  dir.write("docs/4.txt", docs[4]);
  dir.write("docs/5.txt", docs[5]);
  // GPT-2 (vocab.json + merges.txt), and tokenizer.json kinds with their own cut rules: Llama 3's
  // pattern, Qwen2's (NFC first), Llama 2's SentencePiece-style BPE (no "▁" before a continuation
  // chunk) in both of its forms, Gemma's (no "▁" before any text) and Phi-3's (Llama 2's with
  // whitespace-absorbing chat tokens); all but GPT-2's, Qwen2's and Gemma's put a BOS before every
  // document.
  for (const std::string kind : {"", "llama3", "qwen2", "llama2", "llama2-legacy", "gemma", "phi3"}) {
    SECTION(kind.empty() ? "gpt2" : kind) {
      const auto vocab = dir / ("vocab-" + kind);
      const auto oracle = llmrdzv::test::hf_encode(vocab, docs, llmrdzv::test::OracleTraining{train_corpus, 600, true, true, kind}, true);
      const Tokenizer tokenizer = Tokenizer::from_directory(vocab);
      REQUIRE(tokenizer.eos_id() == oracle.eos);
      REQUIRE(tokenizer.bos_id() == oracle.bos);
      CHECK(tokenizer.bos_id().has_value() == (kind != "" && kind != "qwen2" && kind != "gemma"));

      std::vector<TokenId> expected;
      for (const auto& ids : oracle.ids) {
        expected.insert(expected.end(), ids.begin(), ids.end());
        expected.push_back(oracle.eos);
      }
      const SourceList sources = list_sources(dir / "docs");
      CHECK(stream_all(sources, tokenizer, 1 << 20) == expected);
      CHECK(stream_all(sources, tokenizer, 100) == expected);  // many chunks per document
    }
  }
}

TEST_CASE("the token cache is built once, reused, and rebuilt when inputs or tokenizer change") {
  ScratchDir dir("cache");
  dir.write("corpus/a.txt", corpus_text(4, 200));
  dir.write("corpus/b.txt", corpus_text(5, 300));
  const Tokenizer bytes = Tokenizer::bytes();
  CacheOptions options{dir / "cache", "train", 1000};

  CacheOutcome outcome{};
  const auto expected = stream_all(list_sources(dir / "corpus"), bytes, 1 << 20);
  {
    const TokenStore store = TokenStore::open_or_build(list_sources(dir / "corpus"), {}, bytes, options, &outcome);
    CHECK(outcome == CacheOutcome::built);
    CHECK(store.bytes_per_id() == 2);
    CHECK(store.size() == expected.size());
    CHECK(store.shard_paths().size() == (expected.size() + 999) / 1000);
    CHECK(store.shard_paths().size() == 17);
    CHECK(store.shard_paths().front().filename().string() == "train-00000-of-00017.tok");
    CHECK(store.shard_paths().back().filename().string() == "train-00016-of-00017.tok");
    CHECK(store_all(store) == expected);
  }
  const auto reused = TokenStore::open_or_build(list_sources(dir / "corpus"), {}, bytes, options, &outcome);
  CHECK(outcome == CacheOutcome::reused);
  CHECK(store_all(reused) == expected);

  // Fewer documents: fewer shards; the stale ones are removed.
  std::filesystem::remove(dir / "corpus/b.txt");
  const auto smaller = TokenStore::open_or_build(list_sources(dir / "corpus"), {}, bytes, options, &outcome);
  CHECK(outcome == CacheOutcome::rebuilt);
  CHECK(store_all(smaller) == stream_all(list_sources(dir / "corpus"), bytes, 1 << 20));
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "cache")) files += entry.path().extension() == ".tok";
  CHECK(files == smaller.shard_paths().size());

  // Another tokenizer: another fingerprint.
  dir.write("vocab/corpus.txt", corpus_text(6, 500));
  llmrdzv::test::hf_encode(dir / "vocab", {}, llmrdzv::test::OracleTraining{dir / "vocab/corpus.txt", 400});
  const Tokenizer bpe = Tokenizer::from_directory(dir / "vocab");
  const auto with_bpe = TokenStore::open_or_build(list_sources(dir / "corpus"), {}, bpe, options, &outcome);
  CHECK(outcome == CacheOutcome::rebuilt);
  CHECK(store_all(with_bpe) == stream_all(list_sources(dir / "corpus"), bpe, 1 << 20));

  // Train and validation parts of one input live side by side under their own names.
  CacheOptions validation_options{dir / "cache", "validation", 1000};
  const auto validation = TokenStore::open_or_build(list_sources(dir / "corpus"),
                                                    {DocumentSelection::Part::validation, 50}, bpe,
                                                    validation_options, &outcome);
  CHECK(outcome == CacheOutcome::built);
  TokenStore::open_or_build(list_sources(dir / "corpus"), {}, bpe, options, &outcome);
  CHECK(outcome == CacheOutcome::reused);
}

TEST_CASE("reads cross shard boundaries and blocks are group_texts blocks") {
  ScratchDir dir("cache");
  dir.write("c.txt", corpus_text(7, 100));
  const Tokenizer bytes = Tokenizer::bytes();
  const TokenStore store = TokenStore::open_or_build(list_sources(dir / "c.txt"), {}, bytes, {dir / "cache", "t", 37});
  const auto all = store_all(store);
  REQUIRE(store.shard_paths().size() > 3);

  std::vector<std::int64_t> window(100);
  store.read(20, window);
  for (std::size_t i = 0; i < window.size(); ++i) REQUIRE(window[i] == all[20 + i]);
  CHECK_THROWS_WITH(store.read(all.size() - 50, window), Catch::Contains("past the end"));

  const Blocks blocks(store, 64);
  CHECK(blocks.count() == all.size() / 64);
  std::vector<std::int64_t> block(64);
  blocks.read(blocks.count() - 1, block);
  for (std::size_t i = 0; i < 64; ++i) REQUIRE(block[i] == all[(blocks.count() - 1) * 64 + i]);
  CHECK_THROWS_WITH(blocks.read(blocks.count(), block), Catch::Contains("past the last"));
  CHECK_THROWS_WITH(Blocks(store, 0), Catch::Contains("block_size must be at least 1"));
}

namespace {

// A byte-tokenised corpus cached in shards of 500 tokens.
struct ShardedCache {
  explicit ShardedCache(std::uint32_t seed) : sources(list_sources(dir.write("c.txt", corpus_text(seed, 100)))) {}
  ScratchDir dir{"cache"};
  const Tokenizer bytes = Tokenizer::bytes();
  const CacheOptions options{dir / "cache", "train", 500};
  const SourceList sources;
};

}  // namespace

TEST_CASE("a corrupt, truncated or oversized shard is an error naming the file, never used or replaced") {
  const ShardedCache cache(8);
  const auto& [dir, bytes, options, sources] = cache;
  const auto paths = TokenStore::open_or_build(sources, {}, bytes, options).shard_paths();
  const auto shard = paths[1];
  const auto size = std::filesystem::file_size(shard);

  SECTION("a flipped payload byte") {
    flip_byte(shard, 200);
    CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, bytes, options),
                      Catch::Contains(shard.string()) && Catch::Contains("payload checksum") &&
                          Catch::Contains("delete it to rebuild"));
    flip_byte(shard, 200);
    CHECK_NOTHROW(TokenStore::open_or_build(sources, {}, bytes, options));
  }
  SECTION("a flipped header byte") {
    flip_byte(shard, 20);
    CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, bytes, options),
                      Catch::Contains(shard.string()) && Catch::Contains("header checksum"));
  }
  SECTION("truncated") {
    std::filesystem::resize_file(shard, size - 3);
    CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, bytes, options), Catch::Contains("truncated"));
    std::filesystem::resize_file(shard, 60);
    CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, bytes, options), Catch::Contains("128-byte header"));
  }
  SECTION("oversized") {
    std::ofstream(shard, std::ios::binary | std::ios::app) << "xx";
    CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, bytes, options), Catch::Contains("oversized"));
  }
  SECTION("renamed to another index") {
    std::filesystem::rename(shard, dir / "cache/train-00007-of-00009.tok");
    CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, bytes, options),
                      Catch::Contains("its header says shard 1 of"));
  }
  CHECK(std::filesystem::exists(paths[0]));
}

TEST_CASE("shards of another format version are rebuilt with a line saying so") {
  const ShardedCache cache(10);
  const auto& [dir, bytes, options, sources] = cache;
  const auto paths = TokenStore::open_or_build(sources, {}, bytes, options).shard_paths();
  const auto expected = store_all(TokenStore::open_or_build(sources, {}, bytes, options));
  for (const auto& path : paths) {  // as version 1 (the hand-rolled checksum) wrote them
    std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(8);
    file.write("\x01\x00\x00\x00", 4);
  }
  std::ostringstream err;
  std::streambuf* const saved = std::cerr.rdbuf(err.rdbuf());
  CacheOutcome outcome{};
  const auto store = TokenStore::open_or_build(sources, {}, bytes, options, &outcome);
  std::cerr.rdbuf(saved);
  CHECK(outcome == CacheOutcome::rebuilt);
  CHECK(store_all(store) == expected);
  CHECK_THAT(err.str(), Catch::Contains("'train'") && Catch::Contains("format version 1") &&
                            Catch::Contains("writes 2: rebuilding it"));
  TokenStore::open_or_build(sources, {}, bytes, options, &outcome);
  CHECK(outcome == CacheOutcome::reused);
}

TEST_CASE("a missing shard means a half-replaced set: the part is rebuilt") {
  const ShardedCache cache(9);
  const auto& [dir, bytes, options, sources] = cache;
  const auto expected = store_all(TokenStore::open_or_build(sources, {}, bytes, options));
  std::filesystem::remove(TokenStore::open_or_build(sources, {}, bytes, options).shard_paths()[2]);
  CacheOutcome outcome{};
  const auto store = TokenStore::open_or_build(sources, {}, bytes, options, &outcome);
  CHECK(outcome == CacheOutcome::rebuilt);
  CHECK(store_all(store) == expected);
}

TEST_CASE("vocabularies over 65536 entries store 4-byte ids") {
  ScratchDir dir("cache");
  std::string vocab = "{";
  const Tokenizer bytes = Tokenizer::bytes();
  for (TokenId id = 0; id < 256; ++id) {
    vocab += (id ? "," : "") + std::string("\"");
    for (const char c : bytes.token_text(id)) vocab += c == '"' ? std::string("\\\"") : c == '\\' ? std::string("\\\\") : std::string(1, c);
    vocab += "\":" + std::to_string(id);
  }
  for (TokenId id = 256; id < 70000; ++id) vocab += ",\"extra" + std::to_string(id) + "\":" + std::to_string(id);
  vocab += ",\"<|endoftext|>\":70000}";
  dir.write("vocab/vocab.json", vocab);
  dir.write("vocab/merges.txt", "#version: 0.2\n");
  const Tokenizer wide = Tokenizer::from_directory(dir / "vocab");
  REQUIRE(wide.vocab_size() == 70001);
  dir.write("c.txt", "some text<|endoftext|>more");
  const auto store = TokenStore::open_or_build(list_sources(dir / "c.txt"), {}, wide, {dir / "cache", "t", 1000});
  CHECK(store.bytes_per_id() == 4);
  const auto ids = store_all(store);
  CHECK(ids == stream_all(list_sources(dir / "c.txt"), wide, 1 << 20));
  CHECK(std::count(ids.begin(), ids.end(), TokenId{70000}) == 2);
}

TEST_CASE("ranks opening one cache at once tokenise it once and read the same tokens") {
  ScratchDir dir("cache");
  dir.write("c.txt", corpus_text(10, 2000));
  const auto sources = list_sources(dir / "c.txt");
  const CacheOptions options{dir / "cache", "train", 4096};
  std::vector<CacheOutcome> outcomes(4);
  std::vector<std::vector<TokenId>> tokens(4);
  std::vector<std::thread> ranks;
  for (std::size_t r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      const Tokenizer tokenizer = Tokenizer::bytes();
      tokens[r] = store_all(TokenStore::open_or_build(sources, {}, tokenizer, options, &outcomes[r]));
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(std::count(outcomes.begin(), outcomes.end(), CacheOutcome::built) == 1);
  CHECK(std::count(outcomes.begin(), outcomes.end(), CacheOutcome::reused) == 3);
  for (std::size_t r = 1; r < 4; ++r) CHECK(tokens[r] == tokens[0]);
}

TEST_CASE("bad cache options are clear errors") {
  ScratchDir dir("cache");
  dir.write("c.txt", "text");
  const auto sources = list_sources(dir / "c.txt");
  CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, Tokenizer::bytes(), {dir / "cache", "t", 0}),
                    Catch::Contains("shard_tokens"));
  CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, Tokenizer::bytes(), {dir / "cache", "a/b", 10}),
                    Catch::Contains("bad part name"));
  dir.write("file-not-dir", "x");
  CHECK_THROWS_WITH(TokenStore::open_or_build(sources, {}, Tokenizer::bytes(), {dir / "file-not-dir", "t", 10}),
                    Catch::Contains("cannot create"));
}
