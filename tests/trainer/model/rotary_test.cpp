// The fused rotary embeddings (fast_rotary: one pass per head row on fp32 CPU tensors) against HF's
// composite x * cos + rotate_half(x) * sin run through torch's autograd: the output and the input
// gradient bit for bit, for Llama's tables (halves repeated) and for tables whose halves differ,
// for contiguous and strided inputs; other types take the composite.
#include <torch/torch.h>

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

#include <vector>

#include "fast_rotary.hpp"

using llmrdzv::model::detail::rotary;

namespace {

// HF's apply_rotary_pos_emb on x [B, T, H, D] (as [B, H, T, D] for the broadcast), back in x's layout.
torch::Tensor composite(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const torch::Tensor heads = x.transpose(1, 2);
  const std::int64_t half = x.size(3) / 2;
  const torch::Tensor rotated = torch::cat({-heads.slice(-1, half), heads.slice(-1, 0, half)}, -1);
  return (heads * cos + rotated * sin).transpose(1, 2);
}

struct Tables {
  torch::Tensor cos, sin;
};

// Llama's: angles = position * inv_freq, repeated over both halves.
Tables llama_tables(std::int64_t time, std::int64_t dim, std::int64_t past) {
  const torch::Tensor inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, torch::kFloat) / double(dim));
  const torch::Tensor angles = torch::outer(torch::arange(past, past + time, torch::kFloat), inv_freq);
  const torch::Tensor both = torch::cat({angles, angles}, -1);
  return {both.cos(), both.sin()};
}

void check_bitwise(const torch::Tensor& x, const Tables& t) {
  const torch::Tensor upstream = torch::randn(x.sizes());
  const torch::Tensor ours_in = x.detach().clone().requires_grad_();
  const torch::Tensor reference_in = x.detach().clone().requires_grad_();
  const torch::Tensor ours = rotary(ours_in, t.cos, t.sin);
  const torch::Tensor reference = composite(reference_in, t.cos, t.sin);
  CHECK(ours.grad_fn()->name().find("FusedRotary") != std::string::npos);
  CHECK(ours.sizes() == x.sizes());
  CHECK(torch::equal(ours, reference));
  (ours * upstream).sum().backward();
  (reference * upstream).sum().backward();
  CHECK(torch::equal(ours_in.grad(), reference_in.grad()));
}

}  // namespace

TEST_CASE("the fused rotary embeddings equal HF's composite bit for bit, forward and backward", "[rotary]") {
  torch::manual_seed(31);
  at::set_num_threads(2);
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{2, 5, 3, 8}, {1, 7, 4, 64}, {4, 128, 9, 64},
                                                 {3, 1, 2, 2}}) {
    INFO("x " << shape);
    const torch::Tensor x = torch::randn(shape) * 2;
    check_bitwise(x, llama_tables(shape[1], shape[3], 0));
    check_bitwise(x, llama_tables(shape[1], shape[3], 37));  // generation past 37 cached positions
    // Tables whose halves differ: the backward must pair each half with the right one.
    check_bitwise(x, {torch::randn({shape[1], shape[3]}), torch::randn({shape[1], shape[3]})});
  }
}

TEST_CASE("the fused rotary embeddings read strided inputs, and other types take the composite", "[rotary]") {
  torch::manual_seed(32);
  const Tables t = llama_tables(6, 16, 0);
  const torch::Tensor wide = torch::randn({2, 3, 6, 16});
  const torch::Tensor x = wide.transpose(1, 2);  // [2, 6, 3, 16], not contiguous
  REQUIRE_FALSE(x.is_contiguous());
  CHECK(torch::equal(rotary(x, t.cos, t.sin), composite(x, t.cos, t.sin)));

  const torch::Tensor half = x.to(torch::kBFloat16);
  const torch::Tensor half_cos = t.cos.to(torch::kBFloat16), half_sin = t.sin.to(torch::kBFloat16);
  CHECK(torch::equal(rotary(half, half_cos, half_sin), composite(half, half_cos, half_sin)));
}
