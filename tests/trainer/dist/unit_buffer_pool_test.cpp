// UnitBufferPool: a released tensor's bytes go back to a tensor of the same size (the same memory,
// not a copy), at most per_size of one size are kept, other sizes get their own, and kept_bytes
// counts what is held.
#include <ATen/ATen.h>

#include "llmrdzv/dist/unit_buffer_pool.hpp"
#include "llmrdzv/kernel_support/tensor_storage.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using llmrdzv::dist::UnitBufferPool;

namespace {

// A float tensor of `n` elements without its bytes, as ShardedUnits' units are between uses.
at::Tensor released(std::int64_t n) {
  at::Tensor t = at::empty({n}, at::kFloat);
  llmrdzv::kernel_support::release_storage(t);
  return t;
}

std::size_t bytes_of(const at::Tensor& t) { return t.storage().nbytes(); }

}  // namespace

TEST_CASE("UnitBufferPool hands a kept buffer to the next tensor of its size and keeps at most per_size of a size",
          "[dist][sharded]") {
  UnitBufferPool pool(2);
  at::Tensor a = released(1000), b = released(1000), c = released(1000), d = released(1000), small = released(10);

  pool.take(a);
  REQUIRE(bytes_of(a) == 4000);
  a.fill_(3);
  const void* a_memory = a.data_ptr();
  pool.take(a);  // has its bytes: unchanged
  CHECK(a.data_ptr() == a_memory);

  pool.keep(a);
  CHECK(bytes_of(a) == 0);
  CHECK(a.sizes() == at::IntArrayRef{1000});  // the shape stays
  CHECK(pool.kept_bytes() == 4000);
  pool.take(b);  // a's memory, its values as they were
  CHECK(b.data_ptr() == a_memory);
  CHECK(b.eq(3).all().item<bool>());
  CHECK(pool.kept_bytes() == 0);

  pool.take(small);  // nothing kept of its size: new memory
  CHECK(bytes_of(small) == 40);
  pool.take(c);
  pool.take(d);
  pool.keep(b);
  pool.keep(c);
  pool.keep(d);  // a third of one size: freed, not kept
  pool.keep(small);
  CHECK(pool.kept_bytes() == 2 * 4000 + 40);
  CHECK(bytes_of(d) == 0);

  pool.keep(d);  // no bytes: nothing happens
  CHECK(pool.kept_bytes() == 2 * 4000 + 40);
  pool.take(a);
  pool.take(small);
  CHECK(pool.kept_bytes() == 4000);
  CHECK(bytes_of(small) == 40);
}
