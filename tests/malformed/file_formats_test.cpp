// Damaged JSON text and safetensors images: the strict JSON reader (under config.json,
// tokenizer.json, trainer_state.json and every safetensors header) and the safetensors validator
// refuse them with their own errors, and whatever they accept is consistent.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/safetensors.hpp"

using namespace llmrdzv;
using testing::Broken;
using testing::feed_damaged;

TEST_CASE("the JSON reader refuses damaged documents with ParseError and round-trips what it accepts", "[malformed][json]") {
  const std::vector<std::string> seeds = {
      R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12, "layer_norm_epsilon": 1e-05,
          "activation_function": "gelu_new", "tie_word_embeddings": true, "bos_token_id": 50256, "torch_dtype": "float32"})",
      R"({"best_metric": null, "global_step": 1200, "log_history": [{"loss": 3.25, "step": 100, "learning_rate": 0.0006},
          {"eval_loss": 2.5e0, "step": 200}], "note": "caf\u00e9 \ud83d\ude00 \"quoted\" \\ tab\t"})",
      R"([-0.0, 1.7976931348623157e308, 5e-324, -9223372036854775808, 18446744073709551615, [], {}, "", true, false])",
  };
  const auto report = feed_damaged<json::ParseError>("json::parse", seeds, 20000, [](const std::string& text) {
    const json::Value value = json::parse(text);
    const std::string written = json::write(value);
    if (json::write(json::parse(written)) != written)
      throw Broken("an accepted document does not read back as written: " + written);
  });
  // Some damage leaves valid JSON (a digit for a digit): both outcomes were exercised.
  CHECK(report.accepted > 0);
}

namespace {

std::vector<std::byte> to_bytes(const std::string& text) {
  std::vector<std::byte> out(text.size());
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::string safetensors_seed(const std::map<std::string, std::string>& metadata) {
  const std::vector<float> weights = {1, 2, 3, 4, 5, 6};
  const std::vector<std::uint16_t> halves = {0x3f80, 0x4000, 0x4040, 0x4080};
  const std::vector<std::int64_t> ids = {50256};
  const std::vector<io::TensorBytes> tensors = {
      {"transformer.h.0.attn.c_attn.weight", io::Dtype::F32, {2, 3}, std::as_bytes(std::span(weights))},
      {"lm_head.bias", io::Dtype::BF16, {4}, std::as_bytes(std::span(halves))},
      {"step", io::Dtype::I64, {}, std::as_bytes(std::span(ids))},
      {"empty", io::Dtype::F16, {0, 5}, {}},
  };
  const auto image = io::serialize_safetensors(tensors, metadata);
  return std::string(reinterpret_cast<const char*>(image.data()), image.size());
}

}  // namespace

TEST_CASE("the safetensors validator refuses damaged images with SafetensorsError and keeps every tensor it accepts inside the data", "[malformed][safetensors]") {
  const std::vector<std::string> seeds = {safetensors_seed({{"format", "pt"}}), safetensors_seed({})};
  feed_damaged<io::SafetensorsError>("SafetensorsFile::from_bytes", seeds, 20000, [](const std::string& image) {
    const auto file = io::SafetensorsFile::from_bytes(to_bytes(image), "damaged.safetensors");
    // The data section (after the 8-byte length and the header) is covered exactly: every tensor's
    // bytes match its shape, none overlap, no byte is left over (the format's own rules).
    std::uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(image[static_cast<std::size_t>(i)]);
    std::map<std::uint64_t, std::uint64_t> spans;  // begin -> end
    for (const auto& info : file.tensors()) {
      if (file.data(info).size() != info.numel() * io::dtype_size(info.dtype) || info.end - info.begin != file.data(info).size())
        throw Broken(info.name + ": its bytes do not match its shape");
      if (info.begin != info.end) spans.emplace(info.begin, info.end);
    }
    std::uint64_t covered = 0;
    for (const auto& [begin, end] : spans) {
      if (begin != covered) throw Broken("a gap or an overlap at data byte " + std::to_string(begin));
      covered = end;
    }
    if (covered != image.size() - 8 - header_len) throw Broken("data bytes left over after " + std::to_string(covered));
  });
}
