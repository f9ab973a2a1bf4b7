// The GPT-2 modules on their own: HF parameter names and shapes, HF initialisation, causality,
// KV-cache decoding against forward, HF's shifted loss with ignored labels, bad inputs, and
// activation checkpointing giving the same loss and gradients as a plain backward (dropout on, so
// the recomputation must replay the RNG).
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/randint.h>
#include <torch/utils.h>

#include <cmath>
#include <map>

#include "llmrdzv/model/causal_lm.hpp"
#include "tiny_gpt2.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;
using model::Gpt2Config;
using model::CausalLm;

namespace {

std::map<std::string, at::Tensor> grads_of(CausalLm& m) {
  std::map<std::string, at::Tensor> out;
  for (auto& p : m->named_parameters()) out[p.key()] = p.value().grad().clone();
  return out;
}

}  // namespace

TEST_CASE("gpt2 parameters carry HF names and torch Linear shapes", "[gpt2]") {
  CausalLm m = model::make_causal_lm(testing::tiny_gpt2());
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& p : m->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
  std::map<std::string, std::vector<std::int64_t>> expected = {
      {"transformer.wte.weight", {67, 32}}, {"transformer.wpe.weight", {24, 32}},
      {"transformer.ln_f.weight", {32}},    {"transformer.ln_f.bias", {32}}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    expected[h + "ln_1.weight"] = {32};
    expected[h + "ln_1.bias"] = {32};
    expected[h + "attn.c_attn.weight"] = {96, 32};
    expected[h + "attn.c_attn.bias"] = {96};
    expected[h + "attn.c_proj.weight"] = {32, 32};
    expected[h + "attn.c_proj.bias"] = {32};
    expected[h + "ln_2.weight"] = {32};
    expected[h + "ln_2.bias"] = {32};
    expected[h + "mlp.c_fc.weight"] = {128, 32};
    expected[h + "mlp.c_fc.bias"] = {128};
    expected[h + "mlp.c_proj.weight"] = {32, 128};
    expected[h + "mlp.c_proj.bias"] = {32};
  }
  CHECK(shapes == expected);  // lm_head is tied, not a parameter of its own
}

TEST_CASE("gpt2 initialises as HF does", "[gpt2]") {
  torch::manual_seed(0);
  Gpt2Config c = testing::tiny_gpt2();
  c.n_embd = 256;
  c.n_head = 8;
  c.n_layer = 8;
  c.vocab_size = 4096;
  CausalLm m = model::make_causal_lm(c);
  const double proj_std = 0.02 / std::sqrt(16.0);
  for (const auto& p : m->named_parameters()) {
    const std::string& name = p.key();
    const at::Tensor& t = p.value();
    INFO(name);
    if (name.ends_with(".bias")) {
      CHECK(t.abs().max().item<float>() == 0.0f);
    } else if (name.find(".ln_") != std::string::npos) {
      CHECK(t.eq(1.0).all().item<bool>());
    } else {
      const double expected = name.ends_with("c_proj.weight") ? proj_std : 0.02;
      CHECK(t.std().item<double>() == Approx(expected).epsilon(0.05));
      CHECK(std::abs(t.mean().item<double>()) < expected * 0.05);
    }
  }
}

TEST_CASE("gpt2 is causal: later tokens never change earlier logits", "[gpt2]") {
  torch::manual_seed(1);
  CausalLm m = model::make_causal_lm(testing::tiny_gpt2());
  m->eval();
  at::NoGradGuard no_grad;
  const at::Tensor ids = at::randint(0, 67, {2, 20});
  const at::Tensor logits = m->forward(ids).logits;
  for (std::int64_t cut : {1, 7, 19}) {
    at::Tensor changed = ids.clone();
    changed.slice(1, cut) = (changed.slice(1, cut) + 1) % 67;
    const at::Tensor other = m->forward(changed).logits;
    INFO("tokens from position " << cut << " changed");
    CHECK(at::allclose(other.slice(1, 0, cut), logits.slice(1, 0, cut), 0.0, 1e-6));
    CHECK_FALSE(at::allclose(other.slice(1, cut), logits.slice(1, cut), 1e-3, 1e-3));
  }
}

TEST_CASE("gpt2 decode with a KV cache gives forward's logits, one position at a time", "[gpt2][decode]") {
  torch::manual_seed(2);
  Gpt2Config config = testing::tiny_gpt2();
  config.tie_word_embeddings = GENERATE(true, false);  // the untied head decodes through lm_head too
  CausalLm m = model::make_causal_lm(config);
  CHECK(m->named_parameters().contains("lm_head.weight") == !config.tie_word_embeddings);
  m->eval();
  at::NoGradGuard no_grad;
  const at::Tensor ids = at::randint(0, 67, {2, 24});  // up to n_positions
  const at::Tensor full = m->forward(ids).logits;
  model::KvCache cache = m->new_cache(2);
  const at::Tensor prompt = m->decode(ids.slice(1, 0, 5), cache);  // the prompt in one call
  CHECK(cache.length == 5);
  CHECK(prompt.sizes() == at::IntArrayRef{2, 67});
  CHECK(at::allclose(prompt, full.select(1, 4), 1e-5, 1e-5));
  for (std::int64_t t = 5; t < 24; ++t) {
    INFO("position " << t);
    CHECK(at::allclose(m->decode(ids.slice(1, t, t + 1), cache), full.select(1, t), 1e-5, 1e-5));
  }
  CHECK(cache.length == 24);

  // A full cache, several new positions after the prompt, and a cache of another batch size are refused.
  CHECK_THROWS_WITH(m->decode(ids.slice(1, 0, 1), cache), Catch::Contains("outside [1, 24] (the model's positions)"));
  cache.length = 3;
  CHECK_THROWS_WITH(m->decode(ids.slice(1, 3, 5), cache), Catch::Contains("one new position at a time"));
  model::KvCache single = m->new_cache(1);
  CHECK_THROWS_WITH(m->decode(ids.slice(1, 0, 2), single), Catch::Contains("another model, batch size"));
  // A cache sized for fewer positions holds exactly those, and says so when full.
  model::KvCache short_cache = m->new_cache(2, 6);
  CHECK(short_cache.keys[0].size(2) == 6);
  CHECK(m->new_cache(2, 1000).keys[0].size(2) == 24);  // capped at the model's positions
  CHECK(at::allclose(m->decode(ids.slice(1, 0, 5), short_cache), full.select(1, 4), 1e-5, 1e-5));
  CHECK(at::allclose(m->decode(ids.slice(1, 5, 6), short_cache), full.select(1, 5), 1e-5, 1e-5));
  CHECK_THROWS_WITH(m->decode(ids.slice(1, 6, 7), short_cache), Catch::Contains("the KV cache holds 6 positions"));
  model::KvCache stale = m->new_cache(2);  // made before the model changed dtype
  m->to(at::kDouble);
  CHECK_THROWS_WITH(m->decode(ids.slice(1, 0, 2), stale), Catch::Contains("device or dtype"));
}

TEST_CASE("gpt2 loss is HF's shifted mean cross-entropy ignoring -100", "[gpt2]") {
  torch::manual_seed(2);
  CausalLm m = model::make_causal_lm(testing::tiny_gpt2());
  m->eval();
  at::NoGradGuard no_grad;
  const at::Tensor ids = at::randint(0, 67, {2, 9});
  at::Tensor labels = ids.clone();
  labels.index_put_({0, 3}, -100);
  labels.index_put_({1, 8}, -100);
  const auto out = m->forward(ids, labels);
  const at::Tensor logp = at::log_softmax(out.logits, -1);
  double total = 0;
  int count = 0;
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t + 1 < 9; ++t) {
      const std::int64_t target = labels[b][t + 1].item<std::int64_t>();
      if (target == -100) continue;
      total -= logp[b][t][target].item<double>();
      ++count;
    }
  }
  CHECK(count == 14);
  CHECK(out.loss.item<double>() == Approx(total / count).epsilon(1e-6));
  CHECK_FALSE(m->forward(ids).loss.defined());
}

TEST_CASE("gpt2 rejects bad inputs with clear errors", "[gpt2]") {
  CausalLm m = model::make_causal_lm(testing::tiny_gpt2());
  CHECK_THROWS_WITH(m->forward(at::randint(0, 67, {2, 25})), "sequence length 25 is outside [1, 24] (the model's positions)");
  CHECK_THROWS_WITH(m->forward(at::full({1, 4}, 67, at::kLong)), "token id 67 is outside the vocabulary (vocab_size 67)");
  CHECK_THROWS_WITH(m->forward(at::full({1, 4}, -1, at::kLong)), Catch::Contains("token id -1"));
  CHECK_THROWS_WITH(m->forward(at::randint(0, 67, {4})), "input_ids must be a 2-D int64 tensor [batch, time]");
  CHECK_THROWS_WITH(m->forward(at::randint(0, 67, {1, 4}).to(at::kInt)), Catch::Contains("2-D int64"));
  CHECK_THROWS_WITH(m->forward(at::randint(0, 67, {1, 4}), at::randint(0, 67, {1, 5})), "labels must have input_ids' shape");
  Gpt2Config bad = testing::tiny_gpt2();
  bad.n_head = 5;
  CHECK_THROWS_WITH(model::make_causal_lm(bad), Catch::Contains("model config: n_embd (32) must be divisible by n_head (5)"));
}

TEST_CASE("activation checkpointing gives identical loss and gradients", "[gpt2][checkpointing]") {
  torch::manual_seed(3);
  CausalLm m = model::make_causal_lm(testing::tiny_gpt2(/*dropout=*/0.1));
  m->train();
  const at::Tensor ids = at::randint(0, 67, {3, 16});

  auto run = [&](bool checkpointing) {
    m->set_activation_checkpointing(checkpointing);
    m->zero_grad();
    torch::manual_seed(42);  // same dropout masks in both runs
    const at::Tensor loss = m->forward(ids, ids).loss;
    loss.backward();
    return std::pair{loss.item<double>(), grads_of(m)};
  };
  const auto [plain_loss, plain_grads] = run(false);
  const auto [ckpt_loss, ckpt_grads] = run(true);
  CHECK(ckpt_loss == plain_loss);
  for (const auto& [name, g] : plain_grads) {
    INFO(name);
    CHECK(g.abs().sum().item<double>() > 0);
    CHECK(at::allclose(ckpt_grads.at(name), g, 1e-5, 1e-7));
  }
  // Without replaying the RNG the recomputed dropout masks differ: a third run with a different
  // seed must not match, or the comparison above proves nothing.
  m->set_activation_checkpointing(false);
  m->zero_grad();
  torch::manual_seed(43);
  m->forward(ids, ids).loss.backward();
  CHECK_FALSE(at::allclose(grads_of(m).at("transformer.h.0.mlp.c_fc.weight"), plain_grads.at("transformer.h.0.mlp.c_fc.weight"),
                           1e-5, 1e-7));
}

TEST_CASE("eval mode is deterministic and checkpointing is off under no_grad", "[gpt2][checkpointing]") {
  torch::manual_seed(4);
  CausalLm m = model::make_causal_lm(testing::tiny_gpt2(0.5));
  m->set_activation_checkpointing(true);
  m->eval();
  const at::Tensor ids = at::randint(0, 67, {1, 10});
  const at::Tensor a = m->forward(ids).logits;
  const at::Tensor b = m->forward(ids).logits;
  CHECK(at::equal(a, b));
  m->train();
  at::NoGradGuard no_grad;
  CHECK_FALSE(at::equal(m->forward(ids).logits, a));  // dropout active in train mode
}
