// Validation, per-step coefficients, run-time ISA choice and chunked multi-threading for the
// fused AdamW kernels (kernel_*.cpp), fp32 and bf16-gradient.
#include "llmrdzv/optim/fused_adamw.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

#include "kernel_coeffs.hpp"
#include "step_coeffs.hpp"
#include "worker_pool.hpp"

namespace llmrdzv::optim {
namespace {

using detail::AdamWCoeffs;
using detail::check_hyperparams;
using detail::make_coeffs;
using detail::require;

// 64 Ki floats per chunk: 256 KiB of each array, large enough to amortise scheduling, small
// enough to balance two to a few dozen threads; a multiple of 16 so chunks start on cache lines
// whenever the arrays do.
constexpr std::size_t kChunkElements = std::size_t{1} << 16;

void check_lengths(const AdamWState& s) {
  const auto n = s.param.size();
  require(s.grad.size() == n && s.exp_avg.size() == n && s.exp_avg_sq.size() == n,
          "param, grad, exp_avg and exp_avg_sq must have the same length (got " +
              std::to_string(n) + ", " + std::to_string(s.grad.size()) + ", " +
              std::to_string(s.exp_avg.size()) + ", " + std::to_string(s.exp_avg_sq.size()) + ")");
}

unsigned resolve_threads(unsigned requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

// kernel(begin, count) over [0, n) in kChunkElements pieces, on the pool's threads.
template <class Kernel>
void for_each_chunk(std::size_t n, unsigned threads, Kernel kernel) {
  const std::size_t chunks = (n + kChunkElements - 1) / kChunkElements;
  WorkerPool::instance().run(chunks, resolve_threads(threads), [&](std::size_t chunk) {
    const std::size_t begin = chunk * kChunkElements;
    kernel(begin, std::min(kChunkElements, n - begin));
  });
}

// The entry point of `isa` among one kernel's three.
template <class Entry>
Entry for_isa(Isa isa, Entry avx512, Entry avx2, Entry scalar) {
  return isa == Isa::avx512 ? avx512 : isa == Isa::avx2 ? avx2 : scalar;
}

void check_isa(Isa isa) {
  require(isa_supported(isa), "this CPU cannot run the " + std::string(isa_name(isa)) + " kernel");
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "unknown";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

Isa best_isa() {
  for (Isa isa : {Isa::avx512, Isa::avx2}) {
    if (isa_supported(isa)) return isa;
  }
  return Isa::scalar;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

void adamw_step(const AdamWState& state, const AdamWHyperparams& hp, std::int64_t step,
                const KernelOptions& options) {
  check_lengths(state);
  check_hyperparams(hp, step);
  check_isa(options.isa);
  const AdamWCoeffs coeffs = make_coeffs(hp, step);
  const auto range = for_isa(options.isa, detail::adamw_range_avx512, detail::adamw_range_avx2,
                             detail::adamw_range_scalar);
  const AdamWState& s = state;
  for_each_chunk(s.param.size(), options.threads, [&](std::size_t i, std::size_t n) {
    range(coeffs, s.param.data() + i, s.grad.data() + i, s.exp_avg.data() + i, s.exp_avg_sq.data() + i, n);
  });
}

void adamw_step_bf16(const Bf16AdamWState& state, const AdamWHyperparams& hp, std::int64_t step,
                     const KernelOptions& options) {
  const auto n = state.param.size();
  require(state.grad.size() == n && state.exp_avg.size() == n && state.exp_avg_sq.size() == n &&
              state.rounded.size() == n,
          "param, grad, exp_avg, exp_avg_sq and rounded must have the same length (got " + std::to_string(n) + ", " +
              std::to_string(state.grad.size()) + ", " + std::to_string(state.exp_avg.size()) + ", " +
              std::to_string(state.exp_avg_sq.size()) + ", " + std::to_string(state.rounded.size()) + ")");
  // Each block of lanes is read before it is written: the same array works, a shifted one not.
  const auto* grad_begin = state.grad.data();
  const auto* out_begin = state.rounded.data();
  require(out_begin == grad_begin || out_begin + n <= grad_begin || grad_begin + n <= out_begin,
          "rounded must be the gradient's own array or not overlap it");
  check_hyperparams(hp, step);
  check_isa(options.isa);
  const AdamWCoeffs coeffs = make_coeffs(hp, step);
  const auto range = for_isa(options.isa, detail::adamw_range_bf16_avx512, detail::adamw_range_bf16_avx2,
                             detail::adamw_range_bf16_scalar);
  const Bf16AdamWState& s = state;
  for_each_chunk(n, options.threads, [&](std::size_t i, std::size_t count) {
    range(coeffs, s.param.data() + i, s.grad.data() + i, s.exp_avg.data() + i, s.exp_avg_sq.data() + i,
          s.rounded.data() + i, count);
  });
}

void adamw_traffic_pass(const AdamWState& state, const KernelOptions& options) {
  check_lengths(state);
  check_isa(options.isa);
  const auto range = for_isa(options.isa, detail::traffic_range_avx512, detail::traffic_range_avx2,
                             detail::traffic_range_scalar);
  const AdamWState& s = state;
  for_each_chunk(s.param.size(), options.threads, [&](std::size_t i, std::size_t n) {
    range(s.param.data() + i, s.grad.data() + i, s.exp_avg.data() + i, s.exp_avg_sq.data() + i, n);
  });
}

}  // namespace llmrdzv::optim
