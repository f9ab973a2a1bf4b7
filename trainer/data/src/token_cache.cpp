// The token cache: shard files, their checks, building under a lock, and mapped reads (see
// token_cache.hpp for the file format and the reuse/rebuild/error rules).
#include "llmrdzv/data/token_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "llmrdzv/data/token_stream.hpp"
#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/unique_fd.hpp"
#include "llmrdzv/io/sha256.hpp"

namespace llmrdzv::data {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHeaderBytes = 128;
constexpr char kMagic[8] = {'L', 'L', 'M', 'R', 'T', 'O', 'K', '\0'};
constexpr std::uint32_t kFormatVersion = 2;  // 2: XXH3-64 checksums (1: a hand-rolled 64-bit sum)
using Digest = std::array<std::uint8_t, 32>;

[[noreturn]] void fail_errno(const std::string& action, const fs::path& path) {
  throw DataError("token cache: cannot " + action + " " + path.string() + ": " + std::strerror(errno));
}

// XXH3-64 of a shard's payload as the writer produces it, piece by piece.
class Checksum {
 public:
  Checksum() : state_(XXH3_createState()) {
    if (!state_ || XXH3_64bits_reset(state_.get()) != XXH_OK) throw DataError("token cache: cannot start a checksum");
  }
  void update(const std::uint8_t* data, std::size_t n) { XXH3_64bits_update(state_.get(), data, n); }
  std::uint64_t value() const { return XXH3_64bits_digest(state_.get()); }

 private:
  struct Free {
    void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
  };
  std::unique_ptr<XXH3_state_t, Free> state_;
};

std::uint64_t checksum_of(const std::uint8_t* data, std::size_t n) { return XXH3_64bits(data, n); }

template <typename T>
void put(std::uint8_t* at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<std::uint8_t>(value >> (8 * i));
}
template <typename T>
T get(const std::uint8_t* at) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(at[i]) << (8 * i);
  return value;
}

struct Header {
  std::uint32_t version = kFormatVersion;  // another one: a stale shard, nothing else decoded
  std::uint32_t bytes_per_id = 0;
  std::uint64_t tokens = 0;
  std::uint32_t index = 0;
  std::uint32_t count = 0;
  Digest tokenizer{};
  Digest sources{};
  std::uint64_t payload_checksum = 0;

  std::array<std::uint8_t, kHeaderBytes> encode() const {
    std::array<std::uint8_t, kHeaderBytes> b{};
    std::memcpy(b.data(), kMagic, 8);
    put(b.data() + 8, kFormatVersion);
    put(b.data() + 12, bytes_per_id);
    put(b.data() + 16, tokens);
    put(b.data() + 24, index);
    put(b.data() + 28, count);
    std::memcpy(b.data() + 32, tokenizer.data(), 32);
    std::memcpy(b.data() + 64, sources.data(), 32);
    put(b.data() + 96, payload_checksum);
    put(b.data() + 104, checksum_of(b.data(), 104));
    return b;
  }

  // Checks everything the header alone can tell; throws naming the file. A shard of another
  // format version is not checked further (its layout may differ): the caller rebuilds the part.
  static Header decode(const std::uint8_t* b, std::uint64_t file_size, const fs::path& path) {
    const auto bad = [&](const std::string& problem) {
      return DataError("token cache shard " + path.string() + " is corrupt: " + problem + " (delete it to rebuild)");
    };
    if (file_size < kHeaderBytes) throw bad("shorter than its 128-byte header");
    if (std::memcmp(b, kMagic, 8) != 0) throw bad("bad magic");
    Header h;
    h.version = get<std::uint32_t>(b + 8);
    if (h.version != kFormatVersion) return h;
    if (get<std::uint64_t>(b + 104) != checksum_of(b, 104)) throw bad("header checksum mismatch");
    for (std::size_t i = 112; i < kHeaderBytes; ++i) {
      if (b[i] != 0) throw bad("reserved header bytes are not zero");
    }
    h.bytes_per_id = get<std::uint32_t>(b + 12);
    h.tokens = get<std::uint64_t>(b + 16);
    h.index = get<std::uint32_t>(b + 24);
    h.count = get<std::uint32_t>(b + 28);
    std::memcpy(h.tokenizer.data(), b + 32, 32);
    std::memcpy(h.sources.data(), b + 64, 32);
    h.payload_checksum = get<std::uint64_t>(b + 96);
    if (h.bytes_per_id != 2 && h.bytes_per_id != 4) throw bad(std::to_string(h.bytes_per_id) + " bytes per id");
    if (h.count == 0 || h.index >= h.count) throw bad("shard index " + std::to_string(h.index) + " of " + std::to_string(h.count));
    if (h.tokens > (file_size - kHeaderBytes) / h.bytes_per_id) throw bad("truncated: the header promises more ids than the file holds");
    if (kHeaderBytes + h.tokens * h.bytes_per_id != file_size) throw bad("oversized: bytes after the last id");
    return h;
  }
};

std::string shard_file_name(const std::string& name, std::uint32_t index, std::uint32_t count) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u.tok", index, count);
  return name + suffix;
}

// index/count when `file` is "<name>-NNNNN-of-MMMMM.tok".
std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_shard_name(const std::string& file, const std::string& name) {
  const std::string_view rest = std::string_view(file).substr(std::min(file.size(), name.size()));
  if (file.compare(0, name.size(), name) != 0 || rest.size() != 19 || rest[0] != '-' || rest.substr(6, 4) != "-of-" ||
      rest.substr(15) != ".tok") {
    return std::nullopt;
  }
  const auto number = [](std::string_view digits) -> std::optional<std::uint32_t> {
    std::uint32_t v = 0;
    for (const char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<std::uint32_t>(c - '0');
    }
    return v;
  };
  const auto index = number(rest.substr(1, 5));
  const auto count = number(rest.substr(10, 5));
  if (!index || !count) return std::nullopt;
  return std::pair{*index, *count};
}

using Fd = io::UniqueFd;

// One read-only mapped shard.
struct MappedShard {
  fs::path path;
  Header header;
  void* address = nullptr;
  std::size_t length = 0;

  MappedShard(fs::path p, Header h, void* a, std::size_t l) : path(std::move(p)), header(h), address(a), length(l) {}
  MappedShard(const MappedShard&) = delete;
  MappedShard& operator=(const MappedShard&) = delete;
  ~MappedShard() {
    if (address) ::munmap(address, length);
  }
  const std::uint8_t* payload() const { return static_cast<const std::uint8_t*>(address) + kHeaderBytes; }
};

std::unique_ptr<MappedShard> map_shard(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail_errno("open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("stat", path);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < kHeaderBytes) Header::decode(nullptr, size, path);
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (address == MAP_FAILED) fail_errno("mmap", path);
  auto shard = std::make_unique<MappedShard>(path, Header{}, address, size);
  shard->header = Header::decode(static_cast<const std::uint8_t*>(address), size, path);
  return shard;
}

void verify_payload(const MappedShard& shard) {
  if (checksum_of(shard.payload(), shard.length - kHeaderBytes) != shard.header.payload_checksum) {
    throw DataError("token cache shard " + shard.path.string() +
                    " is corrupt: payload checksum mismatch (delete it to rebuild)");
  }
}

// An exclusive lock on <dir>/<name>.lock while a part is checked or built, so ranks sharing a
// cache directory tokenise once and never see each other's half-written set.
class CacheLock {
 public:
  explicit CacheLock(const fs::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_.get() < 0) fail_errno("create lock file", path);
    while (::flock(fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) fail_errno("lock", path);
    }
  }

 private:
  Fd fd_;
};

// Writes the token stream into temporary shard files; publish() renames them into place.
class ShardWriter {
 public:
  ShardWriter(const CacheOptions& options, unsigned bytes_per_id, const Digest& tokenizer, const Digest& sources)
      : options_(options), bytes_per_id_(bytes_per_id), tokenizer_(tokenizer), sources_(sources) {}
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  ~ShardWriter() {
    current_.reset();
    std::error_code ignored;
    for (const auto& tmp : temps_) fs::remove(tmp, ignored);
  }

  void append(std::span<const tokenizer::TokenId> ids) {
    while (!ids.empty()) {
      if (!current_ || current_tokens_ == options_.shard_tokens) start_shard();
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(ids.size(), options_.shard_tokens - current_tokens_));
      buffer_.clear();
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = buffer_.size();
        buffer_.resize(at + bytes_per_id_);
        if (bytes_per_id_ == 2) {
          put(buffer_.data() + at, static_cast<std::uint16_t>(ids[i]));
        } else {
          put(buffer_.data() + at, static_cast<std::uint32_t>(ids[i]));
        }
      }
      write_all(buffer_.data(), buffer_.size());
      checksum_.update(buffer_.data(), buffer_.size());
      current_tokens_ += n;
      ids = ids.subspan(n);
    }
  }

  // Finishes every shard (count known now), fsyncs and renames them to their final names, then
  // removes the part's stale shards. Returns the final paths in index order.
  std::vector<fs::path> publish(const std::vector<fs::path>& stale) {
    if (!current_) start_shard();  // an empty corpus still gets one (empty) shard
    finish_current();
    const auto count = static_cast<std::uint32_t>(temps_.size());
    std::vector<fs::path> finals;
    for (std::uint32_t i = 0; i < count; ++i) {
      Header header = headers_[i];
      header.count = count;
      Fd fd(::open(temps_[i].c_str(), O_WRONLY | O_CLOEXEC));
      if (fd.get() < 0) fail_errno("reopen", temps_[i]);
      const auto bytes = header.encode();
      if (::pwrite(fd.get(), bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
        fail_errno("write header of", temps_[i]);
      }
      if (::fsync(fd.get()) != 0) fail_errno("fsync", temps_[i]);
      finals.push_back(options_.dir / shard_file_name(options_.name, i, count));
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      if (::rename(temps_[i].c_str(), finals[i].c_str()) != 0) fail_errno("rename into place", finals[i]);
    }
    temps_.clear();
    for (const fs::path& old : stale) {
      if (std::find(finals.begin(), finals.end(), old) == finals.end()) {
        std::error_code ignored;
        fs::remove(old, ignored);
      }
    }
    io::fsync_directory(options_.dir);
    return finals;
  }

 private:
  void start_shard() {
    finish_current();
    const fs::path tmp = options_.dir / ("." + options_.name + ".tmp-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(temps_.size()) + ".tok");
    current_ = std::make_unique<Fd>(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (current_->get() < 0) {
      current_.reset();
      fail_errno("create", tmp);
    }
    temps_.push_back(tmp);
    const std::array<std::uint8_t, kHeaderBytes> placeholder{};
    write_all(placeholder.data(), placeholder.size());
    current_tokens_ = 0;
    checksum_ = Checksum();
  }

  void finish_current() {
    if (!current_) return;
    Header header;
    header.bytes_per_id = bytes_per_id_;
    header.tokens = current_tokens_;
    header.index = static_cast<std::uint32_t>(headers_.size());
    header.tokenizer = tokenizer_;
    header.sources = sources_;
    header.payload_checksum = checksum_.value();
    headers_.push_back(header);
    close_current();
  }

  void close_current() {
    if (current_ && ::close(current_->release()) != 0) {
      current_.reset();
      fail_errno("close", temps_.back());
    }
    current_.reset();
  }

  void write_all(const std::uint8_t* data, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(current_->get(), data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_errno("write", temps_.back());
      }
      data += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  const CacheOptions& options_;
  unsigned bytes_per_id_;
  Digest tokenizer_;
  Digest sources_;
  std::unique_ptr<Fd> current_;
  std::uint64_t current_tokens_ = 0;
  Checksum checksum_;
  std::vector<fs::path> temps_;
  std::vector<Header> headers_;
  std::vector<std::uint8_t> buffer_;
};

// The part's existing shard files, by file name.
std::vector<fs::path> existing_shards(const CacheOptions& options) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(options.dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (parse_shard_name(it->path().filename().string(), options.name)) found.push_back(it->path());
  }
  if (ec) throw DataError("token cache: cannot list " + options.dir.string() + ": " + ec.message());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

struct TokenStore::Shards {
  std::vector<std::unique_ptr<MappedShard>> shards;
  std::vector<std::uint64_t> starts;  // first global id of each shard, plus the total at the end
  unsigned bytes_per_id = 2;

  template <typename Out>
  void read(std::uint64_t first, std::span<Out> out) const {
    const Shards& s = *this;
    const std::uint64_t total = s.starts.back();
    if (first > total || out.size() > total - first) {
      throw DataError("token cache: ids [" + std::to_string(first) + ", " + std::to_string(first + out.size()) +
                      ") are past the end of " + std::to_string(total));
    }
    std::size_t done = 0;
    auto shard = std::upper_bound(s.starts.begin(), s.starts.end(), first) - s.starts.begin() - 1;
    while (done < out.size()) {
      const MappedShard& m = *s.shards[static_cast<std::size_t>(shard)];
      const std::uint64_t offset = first + done - s.starts[static_cast<std::size_t>(shard)];
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size() - done, m.header.tokens - offset));
      const std::uint8_t* p = m.payload() + offset * s.bytes_per_id;
      if (s.bytes_per_id == 2) {
        for (std::size_t i = 0; i < n; ++i) out[done + i] = static_cast<Out>(get<std::uint16_t>(p + 2 * i));
      } else {
        for (std::size_t i = 0; i < n; ++i) out[done + i] = static_cast<Out>(get<std::uint32_t>(p + 4 * i));
      }
      done += n;
      ++shard;
    }
  }
};

TokenStore::TokenStore(std::unique_ptr<Shards> shards) : shards_(std::move(shards)) {}
TokenStore::TokenStore(TokenStore&&) noexcept = default;
TokenStore& TokenStore::operator=(TokenStore&&) noexcept = default;
TokenStore::~TokenStore() = default;

TokenStore TokenStore::open_or_build(const SourceList& sources, const DocumentSelection& selection,
                                     const tokenizer::Tokenizer& tokenizer, const CacheOptions& options,
                                     CacheOutcome* outcome) {
  const auto produce = [&](const TokenSink& sink) {
    DocumentTokenStream stream(sources, selection, tokenizer);
    std::vector<tokenizer::TokenId> ids;
    while (stream.next(ids)) {
      sink(ids);
      ids.clear();
    }
  };
  return open_or_build(source_fingerprint(sources, selection), produce, tokenizer, options, outcome);
}

TokenStore TokenStore::open_or_build(const std::string& inputs_fingerprint, const std::function<void(const TokenSink&)>& produce,
                                     const tokenizer::Tokenizer& tokenizer, const CacheOptions& options,
                                     CacheOutcome* outcome) {
  if (options.shard_tokens == 0) throw DataError("token cache: shard_tokens must be at least 1");
  if (options.name.empty() || options.name.find('/') != std::string::npos) {
    throw DataError("token cache: bad part name '" + options.name + "'");
  }
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) throw DataError("token cache: cannot create " + options.dir.string() + ": " + ec.message());
  const CacheLock lock(options.dir / (options.name + ".lock"));

  const Digest tokenizer_fp = io::from_hex(tokenizer.fingerprint());
  const Digest sources_fp = io::from_hex(inputs_fingerprint);
  const unsigned bytes_per_id = tokenizer.vocab_size() <= 65536 ? 2 : 4;

  // Map what is there: a malformed shard is an error; a complete set with our fingerprints is reused.
  const std::vector<fs::path> present = existing_shards(options);
  auto store = std::make_unique<Shards>();
  bool reusable = !present.empty();
  std::optional<std::uint32_t> old_version;  // of a shard written in another format
  for (const fs::path& path : present) {
    auto shard = map_shard(path);
    if (shard->header.version != kFormatVersion) {
      old_version = shard->header.version;
      reusable = false;
      continue;
    }
    const auto [index, count] = *parse_shard_name(path.filename().string(), options.name);
    if (shard->header.index != index || shard->header.count != count) {
      throw DataError("token cache shard " + path.string() + " is corrupt: its header says shard " +
                      std::to_string(shard->header.index) + " of " + std::to_string(shard->header.count) +
                      " (delete it to rebuild)");
    }
    reusable = reusable && count == present.size() && index == store->shards.size() &&
               shard->header.tokenizer == tokenizer_fp && shard->header.sources == sources_fp &&
               shard->header.bytes_per_id == bytes_per_id;
    store->shards.push_back(std::move(shard));
  }
  if (old_version) {
    std::cerr << "token cache: '" << options.name << "' in " << options.dir.string() << " has format version "
              << *old_version << ", this trainer writes " << kFormatVersion << ": rebuilding it\n";
  }
  reusable = reusable && !options.rebuild;
  if (reusable) {
    for (const auto& shard : store->shards) verify_payload(*shard);
  } else {
    store->shards.clear();
    ShardWriter writer(options, bytes_per_id, tokenizer_fp, sources_fp);
    produce([&](std::span<const tokenizer::TokenId> ids) { writer.append(ids); });
    for (const fs::path& path : writer.publish(present)) store->shards.push_back(map_shard(path));
  }
  if (outcome) *outcome = reusable ? CacheOutcome::reused : present.empty() ? CacheOutcome::built : CacheOutcome::rebuilt;

  store->bytes_per_id = bytes_per_id;
  std::uint64_t total = 0;
  for (const auto& shard : store->shards) {
    store->starts.push_back(total);
    total += shard->header.tokens;
  }
  store->starts.push_back(total);
  return TokenStore(std::move(store));
}

std::uint64_t TokenStore::size() const { return shards_->starts.back(); }
unsigned TokenStore::bytes_per_id() const { return shards_->bytes_per_id; }

std::vector<fs::path> TokenStore::shard_paths() const {
  std::vector<fs::path> paths;
  for (const auto& shard : shards_->shards) paths.push_back(shard->path);
  return paths;
}

void TokenStore::read(std::uint64_t first, std::span<std::int64_t> out) const { shards_->read(first, out); }
void TokenStore::read(std::uint64_t first, std::span<tokenizer::TokenId> out) const { shards_->read(first, out); }

Blocks::Blocks(const TokenStore& store, std::uint64_t block_size) : store_(&store), block_size_(block_size) {
  if (block_size == 0) throw DataError("block_size must be at least 1");
  count_ = store.size() / block_size;
}

void Blocks::read(std::uint64_t block, std::span<std::int64_t> out) const {
  if (out.size() != block_size_) {
    throw DataError("block read into " + std::to_string(out.size()) + " ids, block_size is " + std::to_string(block_size_));
  }
  if (block >= count_) {
    throw DataError("block " + std::to_string(block) + " is past the last of " + std::to_string(count_));
  }
  store_->read(block * block_size_, out);
}

}  // namespace llmrdzv::data
