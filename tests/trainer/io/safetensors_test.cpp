// Our safetensors reader/writer: round trips through files (mapped and read), and every kind of
// bad file (truncated, oversized header, bad JSON, unknown dtype, wrong shape, offsets outside the
// data, overlaps, gaps, trailing bytes, non-string metadata) rejected with a message naming it;
// the streamed writer (tensors fetched one at a time) writes the same file.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "llmrdzv/io/safetensors.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv;
using io::Dtype;
using io::SafetensorsFile;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// A file image with the given header text and `data_size` data bytes (values 0, 1, 2, ...).
std::vector<std::byte> image(const std::string& header, std::size_t data_size, std::uint64_t declared_len = 0) {
  std::uint64_t len = declared_len ? declared_len : header.size();
  std::vector<std::byte> out(8);
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>((len >> (8 * i)) & 0xFF);
  const auto h = bytes_of(header);
  out.insert(out.end(), h.begin(), h.end());
  for (std::size_t i = 0; i < data_size; ++i) out.push_back(static_cast<std::byte>(i & 0xFF));
  return out;
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string open_error(std::vector<std::byte> bytes) {
  try {
    SafetensorsFile::from_bytes(std::move(bytes), "bad.safetensors");
  } catch (const io::SafetensorsError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("safetensors round trip through a file, mapped and read", "[safetensors]") {
  testing::ScratchDir dir;
  const std::vector<float> weights = {1.5f, -2.0f, 3.25f, 0.0f, 1e-8f, 7.0f};
  const std::vector<std::int64_t> ids = {-1, 0, 1LL << 40};
  const std::vector<std::uint16_t> halfs = {0x3c00, 0xc000, 0x7bff};
  const io::TensorBytes tensors[] = {
      {"layer.weight", Dtype::F32, {2, 3}, std::as_bytes(std::span(weights))},
      {"ids", Dtype::I64, {3}, std::as_bytes(std::span(ids))},
      {"h", Dtype::F16, {3, 1}, std::as_bytes(std::span(halfs))},
      {"empty", Dtype::BF16, {0, 4}, {}},
      {"scalar", Dtype::F32, {}, std::as_bytes(std::span(weights).first(1))},
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "ünïcode"}};
  const auto path = dir / "t.safetensors";
  io::write_safetensors(path, tensors, metadata);
  CHECK(std::filesystem::file_size(path) == io::serialize_safetensors(tensors, metadata).size());

  for (auto mode : {SafetensorsFile::Mode::mmap, SafetensorsFile::Mode::read}) {
    const SafetensorsFile file = SafetensorsFile::open(path, mode);
    CHECK(file.metadata() == metadata);
    REQUIRE(file.tensors().size() == 5);
    for (const io::TensorBytes& t : tensors) {
      const io::TensorInfo* info = file.find(t.name);
      REQUIRE(info != nullptr);
      CHECK(info->dtype == t.dtype);
      CHECK(info->shape == t.shape);
      const auto data = file.data(*info);
      REQUIRE(data.size() == t.bytes.size());
      CHECK(std::memcmp(data.data(), t.bytes.data(), data.size()) == 0);
    }
  }
  // The header is padded so the data section starts 8-byte aligned.
  const auto raw = io::serialize_safetensors(tensors, metadata);
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, raw.data(), 8);
  CHECK(header_len % 8 == 0);
}

TEST_CASE("safetensors dtype table matches the format's names and sizes", "[safetensors]") {
  const std::pair<const char*, std::size_t> expected[] = {
      {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8}};
  for (auto [name, size] : expected) {
    Dtype d;
    REQUIRE(io::dtype_from_name(name, d));
    CHECK(io::dtype_name(d) == name);
    CHECK(io::dtype_size(d) == size);
  }
  Dtype d;
  CHECK_FALSE(io::dtype_from_name("F17", d));
  CHECK_FALSE(io::dtype_from_name("f32", d));
}

TEST_CASE("safetensors rejects truncated files", "[safetensors]") {
  testing::ScratchDir dir;
  const std::vector<float> w(16, 1.0f);
  const io::TensorBytes t[] = {{"w", Dtype::F32, {16}, std::as_bytes(std::span(w))}};
  const auto good = io::serialize_safetensors(t);

  const auto short_path = dir / "short.safetensors";
  write_bytes(short_path, std::vector<std::byte>(good.begin(), good.begin() + 5));
  CHECK_THROWS_WITH(SafetensorsFile::open(short_path),
                    short_path.string() + ": truncated: 5 bytes, too short for the 8-byte header length");

  const auto in_header = dir / "in_header.safetensors";
  write_bytes(in_header, std::vector<std::byte>(good.begin(), good.begin() + 20));
  CHECK_THROWS_WITH(SafetensorsFile::open(in_header), Catch::StartsWith(in_header.string() + ": truncated: header length") &&
                                                          Catch::Contains("runs past the end of the file (20 bytes)"));

  const auto in_data = dir / "in_data.safetensors";
  write_bytes(in_data, std::vector<std::byte>(good.begin(), good.end() - 4));
  CHECK_THROWS_WITH(SafetensorsFile::open(in_data, SafetensorsFile::Mode::read),
                    Catch::Contains("tensor \"w\": data_offsets [0, 64] extend past the end of the data section (60 bytes)"));

  CHECK_THROWS_WITH(SafetensorsFile::open(dir / "absent.safetensors"), Catch::Contains("absent.safetensors") &&
                                                                           Catch::Contains("No such file"));
  CHECK_THROWS_WITH(SafetensorsFile::open(dir.path()), Catch::Contains("not a regular file"));
  // A FIFO is refused at once in both modes (open() used to block until a writer came).
  const auto fifo = dir / "fifo.safetensors";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (auto mode : {SafetensorsFile::Mode::mmap, SafetensorsFile::Mode::read}) {
    CHECK_THROWS_WITH(SafetensorsFile::open(fifo, mode), Catch::Contains("not a regular file"));
  }
}

TEST_CASE("safetensors rejects an oversized header length before allocating", "[safetensors]") {
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  CHECK(open_error(image(header, 4, 200'000'000)) ==
        "bad.safetensors: header length 200000000 exceeds the cap of 100000000 bytes");
  CHECK_THAT(open_error(image(header, 4, ~0ULL)), Catch::Contains("exceeds the cap"));
}

TEST_CASE("safetensors rejects malformed headers with a message naming the problem", "[safetensors]") {
  struct Case {
    std::string header;
    std::size_t data;
    std::string message;
  };
  const Case cases[] = {
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},})", 4, "header is not valid JSON: at byte"},
      {R"([1, 2])", 0, "header is a JSON array, not an object"},
      {R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", 4, "tensor \"w\": unknown dtype \"F17\""},
      {R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20,
       "tensor \"w\": shape [2, 3] of F32 needs 6 x 4 bytes but data_offsets span 20"},
      {R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "shape entries must be non-negative integers"},
      {R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, "shape entries must be non-negative integers"},
      {R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", 4, "has too many elements"},
      {R"({"w":{"dtype":"F32","shape":[1]}})", 4, "needs dtype, shape and data_offsets"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, "data_offsets must be two non-negative integers"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8, "end before they begin"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[100,104]}})", 4,
       "data_offsets [100, 104] extend past the end of the data section (4 bytes)"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
       "tensors \"a\" and \"b\" overlap (bytes [4, 8) of the data section)"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12,
       "gap in the data section: bytes [4, 8) belong to no tensor"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 10, "6 trailing bytes after the last tensor"},
      {R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4,
       "__metadata__ value of \"k\" is a number, not a string"},
      {R"({"__metadata__":[],"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4, "__metadata__ is not an object"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4,
       "duplicate key \"a\""},
      {R"({"a":5})", 0, "tensor \"a\": entry is not an object"},
      {"{\"\xff\":{}}", 0, "invalid UTF-8"},
  };
  for (const Case& c : cases) {
    INFO(c.header);
    CHECK_THAT(open_error(image(c.header, c.data)), Catch::StartsWith("bad.safetensors: ") && Catch::Contains(c.message));
  }
  // An empty header object with data is trailing data; with none it is a valid empty file.
  CHECK_THAT(open_error(image("{}", 3)), Catch::Contains("3 trailing bytes"));
  CHECK(SafetensorsFile::from_bytes(image("{}", 0), "empty").tensors().empty());
}

TEST_CASE("safetensors writer refuses inconsistent tensors", "[safetensors]") {
  const std::vector<float> w(3, 0.0f);
  const io::TensorBytes wrong_size[] = {{"w", Dtype::F32, {2, 2}, std::as_bytes(std::span(w))}};
  CHECK_THROWS_WITH(io::serialize_safetensors(wrong_size), Catch::Contains("tensor \"w\" has 12 bytes, its shape and dtype need 16"));
  const io::TensorBytes dup[] = {{"w", Dtype::F32, {3}, std::as_bytes(std::span(w))},
                                 {"w", Dtype::F32, {3}, std::as_bytes(std::span(w))}};
  CHECK_THROWS_WITH(io::serialize_safetensors(dup), Catch::Contains("duplicate tensor \"w\""));
  const io::TensorBytes reserved[] = {{"__metadata__", Dtype::F32, {3}, std::as_bytes(std::span(w))}};
  CHECK_THROWS_WITH(io::serialize_safetensors(reserved), Catch::Contains("reserved"));
}

TEST_CASE("the streamed safetensors writer fetches each tensor in order and writes the same file", "[safetensors]") {
  testing::ScratchDir dir;
  const std::vector<float> a{1, 2, 3, 4, 5, 6};
  const std::vector<std::uint16_t> b{7, 8, 9};
  const io::TensorBytes whole[] = {{"a", Dtype::F32, {2, 3}, std::as_bytes(std::span(a))},
                                   {"b", Dtype::BF16, {3}, std::as_bytes(std::span(b))}};
  std::vector<std::string> fetched;
  const io::DeferredTensor deferred[] = {
      {"a", Dtype::F32, {2, 3}, [&] { fetched.push_back("a"); return std::as_bytes(std::span(a)); }},
      {"b", Dtype::BF16, {3}, [&] { fetched.push_back("b"); return std::as_bytes(std::span(b)); }}};
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  io::write_safetensors_streamed(dir / "streamed.safetensors", deferred, metadata);
  CHECK(fetched == std::vector<std::string>{"a", "b"});
  std::ifstream in(dir / "streamed.safetensors", std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<std::byte> expected = io::serialize_safetensors(whole, metadata);
  REQUIRE(written.size() == expected.size());
  CHECK(std::memcmp(written.data(), expected.data(), expected.size()) == 0);

  // A fetch that brings other bytes than the header promised: refused, and no file is left.
  const io::DeferredTensor short_fetch[] = {
      {"a", Dtype::F32, {2, 3}, [&] { return std::as_bytes(std::span(a)).first(20); }}};
  CHECK_THROWS_WITH(io::write_safetensors_streamed(dir / "short.safetensors", short_fetch),
                    Catch::Contains("tensor \"a\" came with 20 bytes, its header entry has 24"));
  CHECK_FALSE(std::filesystem::exists(dir / "short.safetensors"));
  const io::DeferredTensor negative[] = {{"a", Dtype::F32, {-1}, [&] { return std::as_bytes(std::span(a)); }}};
  CHECK_THROWS_WITH(io::write_safetensors_streamed(dir / "negative.safetensors", negative),
                    Catch::Contains("negative dimension"));
}
