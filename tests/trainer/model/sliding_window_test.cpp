// Sliding-window attention (Mistral's, Qwen2's windowed layers): a token beyond every layer's
// window from a position does not change that position's logits, one inside does, and KV-cache
// decoding one position at a time gives forward's logits past the window.
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randint.h>
#include <torch/utils.h>

#include "llmrdzv/model/causal_lm.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;

namespace {

model::MistralConfig windowed() {
  model::MistralConfig c;
  c.vocab_size = 50;
  c.hidden_size = 24;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.intermediate_size = 40;
  c.num_hidden_layers = 2;
  c.max_position_embeddings = 32;
  c.sliding_window = 4;
  c.bos_token_id = 1;
  c.eos_token_id = {2};
  return c;
}

}  // namespace

TEST_CASE("a sliding window hides the tokens beyond it, and decoding with a KV cache gives forward's logits",
          "[model][window]") {
  torch::manual_seed(7);
  model::CausalLm m = model::make_causal_lm(windowed());
  m->eval();
  at::NoGradGuard no_grad;
  const at::Tensor ids = at::randint(3, 50, {2, 20});
  const at::Tensor logits = m->forward(ids).logits;

  // Two layers of window 4: position t sees tokens down to t - 6.
  at::Tensor changed = ids.clone();
  changed.select(1, 0).fill_(2);
  const at::Tensor other = m->forward(changed).logits;
  CHECK_FALSE(at::allclose(other.select(1, 6), logits.select(1, 6)));
  CHECK(at::equal(other.slice(1, 7), logits.slice(1, 7)));

  model::KvCache cache = m->new_cache(2, 20);
  at::Tensor last = m->decode(ids.slice(1, 0, 3), cache);
  CHECK(at::allclose(last, logits.select(1, 2), 1e-5, 1e-5));
  for (std::int64_t t = 3; t < 20; ++t) {
    INFO("position " << t);
    last = m->decode(ids.slice(1, t, t + 1), cache);
    CHECK(at::allclose(last, logits.select(1, t), 1e-5, 1e-5));
  }
}
