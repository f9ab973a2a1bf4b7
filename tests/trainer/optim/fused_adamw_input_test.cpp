// Every invalid input to the fused AdamW is refused with a message naming the problem, and the
// arrays are left untouched.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "llmrdzv/optim/fused_adamw.hpp"

using namespace llmrdzv::optim;
using Catch::Matchers::Contains;

namespace {

struct Arrays {
  std::vector<float> p = std::vector<float>(10, 1.f), g = std::vector<float>(10, 1.f),
                     m = std::vector<float>(10, 0.f), v = std::vector<float>(10, 0.f);
  AdamWState state() { return {p, g, m, v}; }
};

}  // namespace

TEST_CASE("adamw_step refuses arrays of different lengths") {
  Arrays a;
  a.m.resize(9);
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {}, 1),
                      Contains("same length") && Contains("10, 10, 9, 10"));
  CHECK(a.p == std::vector<float>(10, 1.f));
}

TEST_CASE("adamw_step refuses bad step numbers and hyperparameters") {
  Arrays a;
  REQUIRE_THROWS_AS(adamw_step(a.state(), {}, 0), std::invalid_argument);
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {}, 0), Contains("step must be >= 1"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.lr = -1}, 1), Contains("lr"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.beta1 = 1.0}, 1), Contains("beta1"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.beta2 = -0.1}, 1), Contains("beta2"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.eps = 0}, 1), Contains("eps"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.weight_decay = -1}, 1), Contains("weight_decay"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.grad_scale = -0.5}, 1), Contains("grad_scale"));
  REQUIRE_THROWS_WITH(adamw_step(a.state(), {.grad_scale = std::nan("")}, 1), Contains("grad_scale"));
  CHECK(a.p == std::vector<float>(10, 1.f));
  CHECK(a.m == std::vector<float>(10, 0.f));
}

TEST_CASE("ISA discovery is consistent and an unsupported ISA is refused by name") {
  const auto isas = supported_isas();
  REQUIRE(isas.front() == Isa::scalar);
  CHECK(isas.back() == best_isa());
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    if (isa_supported(isa)) continue;
    Arrays a;
    REQUIRE_THROWS_WITH(adamw_step(a.state(), {}, 1, {.isa = isa}),
                        Contains(std::string(isa_name(isa))) && Contains("cannot run"));
  }
}

TEST_CASE("adamw_step on empty arrays is a no-op") {
  std::vector<float> empty;
  REQUIRE_NOTHROW(adamw_step({empty, empty, empty, empty}, {}, 1));
}
