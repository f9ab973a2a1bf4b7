// HostRead and GradientNorm's start_read on the CPU: a number already on the host is read at once,
// as fp64 whatever its type, before the tensor changes; a GradientNorm copied before or after
// start_read gives the same value; a tensor of more than one element is refused. The GPU side (a
// copy behind the number's own work, waiting for nothing queued after it) runs in the trainer's
// GPU tests through the training loop.
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>

#include "llmrdzv/engine/training_engine.hpp"

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

using llmrdzv::engine::GradientNorm;
using llmrdzv::engine::HostRead;

TEST_CASE("HostRead of a CPU number reads it at once, as fp64", "[engine][host_read]") {
  at::Tensor value = at::full({1}, 2.5, at::TensorOptions().dtype(at::kBFloat16));
  HostRead read(value);
  value.fill_(7.0);  // later changes are not seen: the number was read when the read started
  CHECK(read.value() == 2.5);
  CHECK(HostRead(at::full({}, 0.1, at::TensorOptions().dtype(at::kDouble))).value() == 0.1);
}

TEST_CASE("HostRead refuses a tensor that is not one number", "[engine][host_read][errors]") {
  CHECK_THROWS_WITH(HostRead(at::ones({2})), "HostRead takes a one-element tensor");
}

TEST_CASE("A gradient norm read later, or copied, gives the same value", "[engine][host_read]") {
  GradientNorm norm(at::full({}, 3.0, at::TensorOptions().dtype(at::kFloat)));
  const GradientNorm before = norm;
  norm.start_read();
  const GradientNorm after = norm;
  CHECK(norm.value() == 3.0);
  CHECK(before.value() == 3.0);
  CHECK(after.value() == 3.0);
  GradientNorm number(4.0);
  number.start_read();  // already a host number: nothing to copy
  CHECK(number.value() == 4.0);
}
