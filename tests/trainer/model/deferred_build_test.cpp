// A model built without values (model::WeightInit::deferred, what each ZeRO-3 rank builds): every
// family's parameters have their shapes and no bytes, and HF's initialisation filled into them one
// parameter at a time in model order (weight_initializer, as the engine fills them unit by unit)
// draws exactly what a fully built model's init_weights draws, leaving the RNG where it leaves it
// (OPT's padding row zeroed, as HF's _init_weights leaves it). The per-parameter rules themselves
// are init_weights' (one WeightInitializer both use): what this shows is that a model built
// without values and filled in model order draws the same numbers in the same order.
#include <ATen/ops/equal.h>
#include <ATen/ops/rand.h>
#include <torch/utils.h>

#include "tiny_families.hpp"
#include "llmrdzv/model/causal_lm.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;
using namespace trainer_test::families;

TEST_CASE("a deferred model holds no parameter bytes, and HF's initialisation filled into it parameter by parameter equals init_weights' bit for bit",
          "[model][deferred][families]") {
  for (const Family& family : {kGpt2, kOpt, kLlama, kMistral, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3}) {
    DYNAMIC_SECTION(family.name) {
      model::ModelConfig config = model::preset(family.preset);
      model::apply_overrides(config, family.overrides);
      torch::manual_seed(11);
      model::CausalLm full = model::make_causal_lm(config, model::WeightInit::hf);
      const at::Tensor after_full = at::rand({8});

      torch::manual_seed(11);
      model::CausalLm deferred = model::make_causal_lm(config, model::WeightInit::deferred);
      const auto theirs = full->named_parameters();
      const auto ours = deferred->named_parameters();
      REQUIRE(ours.size() == theirs.size());
      for (const auto& item : ours) {
        INFO(item.key());
        CHECK(item.value().storage().nbytes() == 0);
        CHECK(item.value().sizes() == theirs[item.key()].sizes());
        CHECK(item.value().scalar_type() == at::kFloat);
      }
      const model::WeightInitializer init = deferred->weight_initializer();
      for (const auto& item : ours) {
        INFO(item.key());
        const at::Tensor values = at::empty(item.value().sizes());
        init(item.key(), values);
        CHECK(at::equal(values, theirs[item.key()]));
      }
      CHECK(at::equal(at::rand({8}), after_full));
      if (family.name == std::string("opt")) {  // HF zeroes the padding token's row (pad_token_id 1)
        const at::Tensor table = theirs[full->embedding_name()];
        CHECK(table[1].abs().sum().item<double>() == 0.0);
        CHECK(table[2].abs().sum().item<double>() > 0.0);
      }
    }
  }
}
