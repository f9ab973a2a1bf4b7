// reshard_shard_state: the --shard_parameters optimizer state of N old ranks, cut again for M new
// ranks, is exactly the slice each new rank would have saved (every N and M from 1 to 4, units whose
// sizes do not divide, a unit with no undecayed part), and damaged or foreign state is refused by
// name. The expected slices are computed here from the layout's definition, not with the code's
// own helpers.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "llmrdzv/dist/shard_resharding.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using llmrdzv::dist::reshard_shard_state;
using llmrdzv::dist::UnitLayout;
using llmrdzv::engine::TensorMap;

namespace {

const std::vector<UnitLayout> kUnits{{10, 7}, {5, 5}, {13, 4}};

// Per unit, the whole flat value of each elementwise kind.
struct Truth {
  std::map<std::string, std::vector<at::Tensor>> values;  // kind -> per unit [numel]
  std::int64_t step = 7;
};

Truth make_truth() {
  Truth truth;
  float next = 1;
  for (const char* kind : {"exp_avg", "exp_avg_sq", "master"}) {
    for (const auto& unit : kUnits) {
      truth.values[kind].push_back(at::arange(next, next + static_cast<float>(unit.numel)));
      next += 100;
    }
  }
  return truth;
}

// What rank `rank` of `world` saves: per unit its [r*s, r*s+s) piece of the decayed part [0, d) and
// of the rest [d, n), s = ceil(n / world).
TensorMap state_of(const Truth& truth, int rank, int world) {
  TensorMap state;
  for (std::size_t u = 0; u < kUnits.size(); ++u) {
    const std::int64_t n = kUnits[u].numel, d = kUnits[u].decay_numel, s = (n + world - 1) / world;
    for (const bool decay : {true, false}) {
      const std::int64_t lo = decay ? 0 : d, hi = decay ? d : n;
      const std::int64_t from = std::max<std::int64_t>(rank * s, lo), to = std::min<std::int64_t>(rank * s + s, hi);
      if (to <= from) continue;
      const std::string part = "unit" + std::to_string(u) + (decay ? ".decay" : ".no_decay");
      for (const auto& [kind, units] : truth.values) state[kind + "." + part] = units[u].narrow(0, from, to - from).clone();
      state["step." + part] = at::tensor(truth.step, at::kLong);
    }
  }
  state["shard_parameters.world_size"] = at::tensor(static_cast<std::int64_t>(world), at::kLong);
  return state;
}

// The loader's view of a checkpoint of `world` ranks: every rank's entries under "shard.<k>/".
TensorMap collected(const Truth& truth, int world) {
  TensorMap all;
  for (int k = 0; k < world; ++k) {
    for (const auto& [name, tensor] : state_of(truth, k, world)) all["shard." + std::to_string(k) + "/" + name] = tensor;
  }
  all["shard_parameters.shards"] = at::scalar_tensor(world, at::kLong);
  return all;
}

void expect_equal(const TensorMap& got, const TensorMap& want) {
  std::vector<std::string> got_names, want_names;
  for (const auto& [name, tensor] : got) got_names.push_back(name);
  for (const auto& [name, tensor] : want) want_names.push_back(name);
  REQUIRE(got_names == want_names);
  for (const auto& [name, tensor] : want) {
    INFO(name);
    CHECK(at::equal(got.at(name).reshape({-1}), tensor.reshape({-1})));
  }
}

std::string refusal(const TensorMap& saved, int rank = 0, int world = 2) {
  try {
    reshard_shard_state(saved, kUnits, rank, world);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("ZeRO-3 resharding gives each new rank exactly the slice it would have saved, from 1 to 4 ranks either way",
          "[dist][sharded]") {
  const Truth truth = make_truth();
  for (int old_world = 1; old_world <= 4; ++old_world) {
    for (int world = 1; world <= 4; ++world) {
      for (int rank = 0; rank < world; ++rank) {
        INFO(old_world << " ranks -> rank " << rank << " of " << world);
        expect_equal(reshard_shard_state(collected(truth, old_world), kUnits, rank, world), state_of(truth, rank, world));
      }
    }
  }
}

TEST_CASE("ZeRO-3 resharding refuses a missing piece, another model's layout, disagreeing steps and stray entries by name",
          "[dist][sharded][malformed]") {
  const Truth truth = make_truth();
  const TensorMap saved = collected(truth, 3);
  const auto one = [](std::int64_t value) { return at::tensor(value, at::kLong); };
  struct Damage {
    std::function<void(TensorMap&)> apply;
    std::string says;
  };
  const std::vector<Damage> damages{
      {[](TensorMap& m) { m.erase("shard.1/exp_avg.unit2.no_decay"); },
       "rank 1's piece of 'exp_avg.unit2.no_decay' is missing"},
      {[](TensorMap& m) { m["shard.0/master.unit0.decay"] = at::zeros({3}); },
       "rank 0's piece of 'master.unit0.decay' has 3 elements and this model's layout gives it 4"},
      {[](TensorMap& m) { m["shard.0/exp_avg.unit9.decay"] = at::zeros({2}); },
       "is for unit 9 and this model has 3 units"},
      {[&](TensorMap& m) { m["shard.2/step.unit2.no_decay"] = one(8); },
       "step counts for 'step.unit2.no_decay' differ"},
      {[](TensorMap& m) { m["shard.0/loss_scale"] = at::zeros({1}); }, "unexpected entry 'shard.0/loss_scale'"},
      {[](TensorMap& m) { m["shard.0/exp_avg.unit99999999999.decay"] = at::zeros({1}); },
       "unexpected entry 'shard.0/exp_avg.unit99999999999.decay'"},
      {[](TensorMap& m) { m["shard.3/exp_avg.unit0.decay"] = at::zeros({4}); }, "an entry of rank 3 of 3"},
      {[&](TensorMap& m) { m["shard.2/shard_parameters.world_size"] = one(4); },
       "rank 2's state was sharded over 4 ranks, but the checkpoint was written by 3"},
      {[](TensorMap& m) { m.erase("shard_parameters.shards"); }, "no 'shard_parameters.shards' entry"},
      {[](TensorMap& m) { m["shard_parameters.shards"] = at::zeros({2}); },
       "'shard_parameters.shards' is not one integer"},
      // A piece saved by a rank the layout gives none (unit 1 has no undecayed part).
      {[](TensorMap& m) { m["shard.0/exp_avg.unit1.no_decay"] = at::zeros({1}); },
       "a piece this model's layout does not give it"},
  };
  for (const Damage& damage : damages) {
    TensorMap damaged = saved;
    damage.apply(damaged);
    CHECK_THAT(refusal(damaged), Catch::Contains(damage.says));
  }
}
