// Strict module state transfer: a state copied into a fresh model reproduces it exactly; a state
// with a missing, unexpected, duplicated or mis-shaped tensor is refused and changes nothing.
#include <ATen/ops/equal.h>
#include <torch/utils.h>

#include "llmrdzv/io/module_state.hpp"
#include "llmrdzv/model/causal_lm.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;

namespace {

model::Gpt2Config tiny() {
  model::Gpt2Config c;
  c.vocab_size = 30;
  c.n_positions = 8;
  c.n_embd = 16;
  c.n_layer = 1;
  c.n_head = 2;
  c.bos_token_id = 29;
  c.eos_token_id = {29};
  return c;
}

bool same_state(const torch::nn::Module& a, const torch::nn::Module& b) {
  const io::NamedTensors sa = io::module_state(a), sb = io::module_state(b);
  if (sa.size() != sb.size()) return false;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].first != sb[i].first || !at::equal(sa[i].second, sb[i].second)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("module state copies into a fresh model exactly", "[module_state]") {
  torch::manual_seed(1);
  model::CausalLm a = model::make_causal_lm(tiny());
  torch::manual_seed(2);
  model::CausalLm b = model::make_causal_lm(tiny());
  REQUIRE_FALSE(same_state(*a, *b));
  io::load_module_state(*b, io::module_state(*a), "state");
  CHECK(same_state(*a, *b));
  CHECK(io::module_state(*a).front().first == "transformer.wte.weight");
}

TEST_CASE("a bad module state is refused and changes nothing", "[module_state]") {
  torch::manual_seed(1);
  model::CausalLm a = model::make_causal_lm(tiny());
  torch::manual_seed(2);
  model::CausalLm b = model::make_causal_lm(tiny());
  const io::NamedTensors good = io::module_state(*a);
  model::CausalLm before = model::make_causal_lm(tiny());
  io::load_module_state(*before, io::module_state(*b), "copy");

  io::NamedTensors missing(good.begin(), good.end() - 1);
  CHECK_THROWS_WITH(io::load_module_state(*b, missing, "ckpt/model"), Catch::StartsWith("ckpt/model: missing tensor \"transformer."));
  io::NamedTensors extra = good;
  extra.emplace_back("lm_head.weight", good.front().second);
  CHECK_THROWS_WITH(io::load_module_state(*b, extra, "ckpt/model"), "ckpt/model: unexpected tensor \"lm_head.weight\"");
  io::NamedTensors twice = good;
  twice.push_back(good.front());
  CHECK_THROWS_WITH(io::load_module_state(*b, twice, "ckpt/model"), "ckpt/model: tensor \"transformer.wte.weight\" given twice");
  io::NamedTensors reshaped = good;
  reshaped.front().second = reshaped.front().second.reshape({16, 30});
  CHECK_THROWS_WITH(io::load_module_state(*b, reshaped, "ckpt/model"),
                    "ckpt/model: tensor \"transformer.wte.weight\" has shape [16, 30], the model's is [30, 16]");
  CHECK(same_state(*b, *before));
}
