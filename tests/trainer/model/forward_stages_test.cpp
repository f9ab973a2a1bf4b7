// The forward's stages (CausalLmImpl::forward_stages and the stage hook), which a delayed offload
// update follows to upload new weights while the forward runs: for every family, tied and untied,
// each parameter is in exactly one stage, block i's in stage 1 + i; loss() and forward() reach
// the stages in order, once each, also with checkpointed blocks (whose recomputation in backward
// reads weights already there); decode() reaches none.
#include <ATen/ops/randint.h>
#include <torch/torch.h>

#include <set>
#include <string>
#include <vector>

#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/model/llama_config.hpp"
#include "llmrdzv/model/opt_config.hpp"
#include "tiny_gpt2.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;

namespace {

model::CausalLm tiny(const std::string& family) {
  if (family == "gpt2" || family == "gpt2-untied") {
    model::Gpt2Config c = testing::tiny_gpt2();
    c.tie_word_embeddings = family == "gpt2";
    return model::make_causal_lm(c);
  }
  if (family == "opt") {
    model::OptConfig c;
    c.vocab_size = 67;
    c.hidden_size = 16;
    c.word_embed_proj_dim = 8;  // project_in and project_out: outside the blocks
    c.num_hidden_layers = 3;
    c.num_attention_heads = 2;
    c.ffn_dim = 24;
    c.max_position_embeddings = 24;
    return model::make_causal_lm(c);
  }
  model::LlamaConfig c;
  c.vocab_size = 67;
  c.hidden_size = 16;
  c.num_attention_heads = 2;
  c.intermediate_size = 24;
  c.num_hidden_layers = 3;
  c.max_position_embeddings = 24;
  return model::make_causal_lm(c);
}

}  // namespace

TEST_CASE("every parameter is in one forward stage: the blocks' in theirs, the rest in the first",
          "[model][stages]") {
  for (const std::string family : {"gpt2", "gpt2-untied", "opt", "llama"}) {
    INFO(family);
    model::CausalLm m = tiny(family);
    const auto stages = m->forward_stages();
    const auto layers = static_cast<std::size_t>(m->config().num_layers());
    REQUIRE(stages.size() == layers + 1);
    std::multiset<const c10::TensorImpl*> staged;
    for (const auto& stage : stages) {
      for (const auto& t : stage) staged.insert(t.unsafeGetTensorImpl());
    }
    std::set<const c10::TensorImpl*> all;
    for (const auto& p : m->parameters()) all.insert(p.unsafeGetTensorImpl());
    CHECK(staged.size() == all.size());
    CHECK(std::set<const c10::TensorImpl*>(staged.begin(), staged.end()) == all);
    // Stage 1 + i is block i: its parameters are those named "<...>.<i>.<...>" under the blocks.
    for (std::size_t i = 0; i < layers; ++i) {
      std::set<const c10::TensorImpl*> block;
      for (const auto& p : m->named_parameters()) {
        if (p.key().find("." + std::to_string(i) + ".") != std::string::npos) block.insert(p.value().unsafeGetTensorImpl());
      }
      std::set<const c10::TensorImpl*> stage;
      for (const auto& t : stages[i + 1]) stage.insert(t.unsafeGetTensorImpl());
      CHECK(stage == block);
    }
    // The token embedding (the tied head) comes first.
    const auto named = m->named_parameters();
    const c10::TensorImpl* embedding = named[m->embedding_name()].unsafeGetTensorImpl();
    bool first = false;
    for (const auto& t : stages[0]) first = first || t.unsafeGetTensorImpl() == embedding;
    CHECK(first);
  }
}

TEST_CASE("loss() and forward() reach the stages in order, once each, and decode() reaches none", "[model][stages]") {
  for (const std::string family : {"gpt2", "opt", "llama"}) {
    for (const bool checkpointing : {false, true}) {
      INFO(family << (checkpointing ? " checkpointed" : ""));
      torch::manual_seed(3);
      model::CausalLm m = tiny(family);
      m->set_activation_checkpointing(checkpointing);
      std::vector<std::size_t> seen;
      m->set_stage_hook([&](std::size_t stage) { seen.push_back(stage); });
      std::vector<std::size_t> in_order(static_cast<std::size_t>(m->config().num_layers()) + 1);
      for (std::size_t s = 0; s < in_order.size(); ++s) in_order[s] = s;

      const at::Tensor ids = at::randint(0, 67, {2, 10});
      m->loss(ids, ids).backward();
      CHECK(seen == in_order);
      seen.clear();
      m->forward(ids);
      CHECK(seen == in_order);

      seen.clear();
      m->eval();
      at::NoGradGuard no_grad;
      model::KvCache cache = m->new_cache(2);
      m->decode(ids, cache);
      CHECK(seen.empty());
    }
  }
}
