// The token cache: a corpus part tokenised once into binary shards that later runs memory-map.
//
// Files: <dir>/<name>-NNNNN-of-MMMMM.tok, each a 128-byte header then little-endian token ids:
//   0  magic "LLMRTOK\0"          8  u32 format version (2)     12 u32 bytes per id (2 or 4)
//   16 u64 token count            24 u32 shard index            28 u32 shard count
//   32 32 bytes tokenizer fingerprint (SHA-256)                 64 32 bytes source fingerprint
//   96 u64 payload checksum       104 u64 header checksum (of bytes 0..103)   112..127 zero
// Both checksums are XXH3-64 (xxhash); version 1 had a slower hand-rolled sum in their place.
// ids are u16 when the vocabulary has at most 65536 entries, else u32. Shards are written to
// temporary files, fsynced and renamed into place, so a crash leaves either the old or the new file.
//
// open_or_build: when every shard is present and well-formed and both fingerprints match, the
// shards are mapped (reused); when any fingerprint differs (inputs or tokenizer changed, or a
// half-replaced set) or a shard has another format version (one line on stderr says so) the part
// is rebuilt; a shard that is truncated, oversized or fails its
// checksums is an error naming the file (delete it to rebuild), never silently used or replaced.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::data {

struct CacheOptions {
  std::filesystem::path dir;            // created when missing
  std::string name = "train";           // file prefix: one cached part per name
  std::uint64_t shard_tokens = 1ull << 28;  // tokens per shard file (1 GiB of u32)
  bool rebuild = false;                 // build even when a matching cache is there (--overwrite_cache)
};

enum class CacheOutcome { reused, built, rebuilt };

// A read-only token sequence over memory-mapped shards.
class TokenStore {
 public:
  static TokenStore open_or_build(const SourceList& sources, const DocumentSelection& selection,
                                  const tokenizer::Tokenizer& tokenizer, const CacheOptions& options,
                                  CacheOutcome* outcome = nullptr);

  // The same cache for tokens from elsewhere (run_clm's dataset blocks, run_clm_blocks.hpp):
  // `inputs_fingerprint` (SHA-256 hex) names the inputs and how they become tokens, and
  // produce(sink) hands the ids to sink in order; it runs only when the cache is rebuilt.
  using TokenSink = std::function<void(std::span<const tokenizer::TokenId>)>;
  static TokenStore open_or_build(const std::string& inputs_fingerprint, const std::function<void(const TokenSink&)>& produce,
                                  const tokenizer::Tokenizer& tokenizer, const CacheOptions& options,
                                  CacheOutcome* outcome = nullptr);

  TokenStore(TokenStore&&) noexcept;
  TokenStore& operator=(TokenStore&&) noexcept;
  ~TokenStore();

  std::uint64_t size() const;
  unsigned bytes_per_id() const;
  std::vector<std::filesystem::path> shard_paths() const;

  // Copies ids [first, first + out.size()); throws DataError past the end.
  void read(std::uint64_t first, std::span<std::int64_t> out) const;
  void read(std::uint64_t first, std::span<tokenizer::TokenId> out) const;

 private:
  struct Shards;
  explicit TokenStore(std::unique_ptr<Shards> shards);
  std::unique_ptr<Shards> shards_;
};

// run_clm's group_texts over a token store: block i is ids [i*block_size, (i+1)*block_size);
// the remainder shorter than a block is dropped. Labels are the inputs (the model shifts them).
class Blocks {
 public:
  Blocks(const TokenStore& store, std::uint64_t block_size);  // throws DataError on block_size 0
  std::uint64_t count() const { return count_; }
  std::uint64_t block_size() const { return block_size_; }
  // out.size() must be block_size.
  void read(std::uint64_t block, std::span<std::int64_t> out) const;

 private:
  const TokenStore* store_;
  std::uint64_t block_size_;
  std::uint64_t count_;
};

}  // namespace llmrdzv::data
