// Sampling for `trainer generate`: the prompt runs once into a KV cache, then each new token alone.
// Past n_positions the context is the last n_positions tokens: every position shifts, so from there
// on each token re-runs that window. Temperature 0 is greedy; top_k keeps the k likeliest tokens.
// Generation ends at the tokenizer's EOS or any of the model config's eos_token_id.
#include "llmrdzv/train/generate.hpp"

#include <torch/cuda.h>
#include <torch/utils.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <iostream>

#include "model_setup.hpp"

namespace llmrdzv::train {

std::int64_t sample_next_token(const at::Tensor& logits, double temperature, std::int64_t top_k,
                               at::Generator& generator) {
  if (!at::isfinite(logits).all().item<bool>()) {
    throw std::runtime_error("the model's next-token logits are not finite (NaN or infinity): its weights are broken");
  }
  if (temperature == 0) return logits.argmax().item<std::int64_t>();
  at::Tensor scaled = logits / temperature;
  // A temperature so small that the division overflows: shifted by the maximum first, the top
  // logits stay finite (and take all the probability).
  if (!at::isfinite(scaled).all().item<bool>()) scaled = (logits - logits.max()) / temperature;
  if (top_k > 0 && top_k < scaled.size(0)) {
    const at::Tensor kth = std::get<0>(scaled.topk(top_k)).index({-1});
    scaled = scaled.masked_fill(scaled < kth, -INFINITY);
  }
  return at::multinomial(scaled.softmax(0), 1, false, generator).item<std::int64_t>();
}

std::string generate_text(const GenerateOptions& o) {
  if (o.threads > 0) torch::set_num_threads(static_cast<int>(o.threads));
  std::vector<std::string> hub_log;
  const HubLookup hub{o.model_revision, o.cache_dir};
  const std::string model_dir = locate(o.model, "--model", NamedThing::model, hub, hub_log);
  const std::string tokenizer_dir = locate(o.tokenizer_name, "--tokenizer_name", NamedThing::tokenizer, hub, hub_log);
  for (const std::string& line : hub_log) std::cerr << "trainer: " << line << '\n';  // stdout holds only the text
  const tokenizer::Tokenizer tokenizer = load_tokenizer(tokenizer_dir, model_dir).tokenizer;
  model::CausalLm model = load_model(model_dir);
  if (model->config().vocab_size() < static_cast<std::int64_t>(tokenizer.vocab_size())) {
    throw std::invalid_argument("the tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                                " ids but the model in '" + model_dir + "' has vocab_size " +
                                std::to_string(model->config().vocab_size()));
  }
  const c10::Device device = !o.use_cpu && torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  model->to(device);
  model->eval();
  torch::NoGradGuard no_grad;

  std::vector<tokenizer::TokenId> ids = tokenizer.encode_document(o.prompt);  // with the BOS, as HF's tokenizer(prompt)
  if (ids.empty()) ids.push_back(tokenizer.eos_id());
  // The output is the prompt and what follows, without the BOS; with no prompt, only what follows.
  const std::size_t prompt_length = o.prompt.empty() ? ids.size() : (tokenizer.bos_id() ? 1 : 0);
  at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(o.seed));
  const auto context = static_cast<std::size_t>(model->config().max_positions());
  const auto vocab = static_cast<std::int64_t>(tokenizer.vocab_size());
  // HF's generate stops at the generation config's eos_token_id, which defaults to config.json's
  // (one id or a list: Llama 3.1's <|eot_id|> among them); the tokenizer's EOS ends text too.
  const model::TokenIds& model_eos = model->config().eos_token_ids();
  const auto ends_text = [&](std::int64_t id) {
    return static_cast<tokenizer::TokenId>(id) == tokenizer.eos_id() || std::ranges::find(model_eos, id) != model_eos.end();
  };
  // As many positions as the prompt and the new tokens take, at most the context.
  model::KvCache cache = model->new_cache(1, static_cast<std::int64_t>(ids.size()) + o.max_new_tokens);
  for (std::int64_t n = 0; n < o.max_new_tokens; ++n) {
    if (ids.size() > context) cache.length = 0;  // the window slides: nothing cached still applies
    const std::size_t begin = ids.size() > context ? ids.size() - context : static_cast<std::size_t>(cache.length);
    std::vector<std::int64_t> fresh(ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.end());
    const at::Tensor input = at::tensor(fresh, at::kLong).unsqueeze(0).to(device);
    // Ids past the tokenizer's vocabulary (padded embeddings) are never sampled.
    const at::Tensor logits = model->decode(input, cache)[0].slice(0, 0, vocab).to(at::kCPU, at::kFloat);
    const std::int64_t next = sample_next_token(logits, o.temperature, o.top_k, generator);
    if (ends_text(next)) break;
    ids.push_back(static_cast<tokenizer::TokenId>(next));
  }
  return tokenizer::replace_invalid_utf8(
      tokenizer.decode(std::span<const tokenizer::TokenId>(ids).subspan(prompt_length)));
}

}  // namespace llmrdzv::train
