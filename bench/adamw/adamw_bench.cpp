// adamw-bench: one AdamW step over N fp32 parameters (default GPT-2 small, 124,439,808) with our
// fused kernel, with torch::optim::AdamW, and a ceiling pass with the same memory traffic and no
// math (read p, g, m, v; write p, m, v), all in this run on the same threads. Then the offloaded
// optimizer's step for a bf16 model: the bf16-gradient kernel (read a bf16 gradient, write bf16
// weights, one pass) against the three passes it replaced (widen the gradient with torch's copy,
// the fp32 kernel, round the masters with torch's copy). Prints a table and, as its last line,
// one JSON object. Targets: >= 8x torch and >= 85% of the ceiling.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "llmrdzv/optim/fused_adamw.hpp"

namespace {

using namespace llmrdzv::optim;

constexpr double kBytesPerParam = 7 * sizeof(float);  // 4 arrays read, 3 written

struct Options {
  std::int64_t params = 124'439'808;
  int repeats = 5;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  Isa isa = best_isa();
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "adamw-bench: " << message << "\n"
            << "usage: adamw-bench [--params N] [--repeats R] [--threads T] "
               "[--isa scalar|avx2|avx512]\n";
  std::exit(2);
}

std::int64_t parse_positive(std::string_view flag, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    usage_error(std::string(flag) + " needs a positive integer, got '" + text + "'");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage_error("missing value for " + std::string(flag));
    const char* value = argv[++i];
    if (flag == "--params") {
      o.params = parse_positive(flag, value);
    } else if (flag == "--repeats") {
      o.repeats = static_cast<int>(parse_positive(flag, value));
    } else if (flag == "--threads") {
      o.threads = static_cast<unsigned>(parse_positive(flag, value));
    } else if (flag == "--isa") {
      const auto isas = {Isa::scalar, Isa::avx2, Isa::avx512};
      const auto found = std::find_if(isas.begin(), isas.end(),
                                      [&](Isa isa) { return isa_name(isa) == value; });
      if (found == isas.end()) usage_error("unknown --isa '" + std::string(value) + "'");
      if (!isa_supported(*found)) usage_error("this CPU cannot run --isa " + std::string(value));
      o.isa = *found;
    } else {
      usage_error("unknown flag " + std::string(flag));
    }
  }
  return o;
}

// Median wall time of `repeats` calls, after one untimed warm-up call.
double median_seconds(int repeats, const std::function<void()>& body) {
  body();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

void print_row(const char* name, double seconds, std::int64_t params) {
  std::printf("%-26s %10.4f %14.3e %10.1f\n", name, seconds, double(params) / seconds,
              double(params) * kBytesPerParam / seconds / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  at::set_num_threads(static_cast<int>(o.threads));
  const KernelOptions kernel{.isa = o.isa, .threads = o.threads};

  double ours_s = 0, ceiling_s = 0;
  {
    const auto n = static_cast<std::size_t>(o.params);
    std::vector<float> p(n, 0.5f), g(n, 0.01f), m(n, 0.f), v(n, 0.f);
    std::int64_t step = 0;
    const AdamWHyperparams hp;
    ours_s = median_seconds(o.repeats, [&] { adamw_step({p, g, m, v}, hp, ++step, kernel); });
    ceiling_s = median_seconds(o.repeats, [&] { adamw_traffic_pass({p, g, m, v}, kernel); });
  }
  double torch_s = 0;
  {
    auto param = torch::full({o.params}, 0.5f).set_requires_grad(true);
    param.mutable_grad() = torch::full({o.params}, 0.01f);
    torch::optim::AdamW reference({param}, torch::optim::AdamWOptions(1e-3));
    torch_s = median_seconds(o.repeats, [&] { reference.step(); });
  }

  double one_pass_s = 0, three_passes_s = 0;
  {
    const auto n = static_cast<std::size_t>(o.params);
    std::vector<float> p(n, 0.5f), m(n, 0.f), v(n, 0.f);
    std::vector<std::uint16_t> g16(n, 0x3C24), rounded(n);  // 0.01 in bf16
    std::int64_t step = 0;
    const AdamWHyperparams hp;
    one_pass_s = median_seconds(o.repeats, [&] { adamw_step_bf16({p, g16, m, v, rounded}, hp, ++step, kernel); });
    const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
    const torch::Tensor grad16 = torch::from_blob(g16.data(), {o.params}, bf16);
    const torch::Tensor out16 = torch::from_blob(rounded.data(), {o.params}, bf16);
    const torch::Tensor master = torch::from_blob(p.data(), {o.params});
    torch::Tensor grad32 = torch::empty({o.params});
    three_passes_s = median_seconds(o.repeats, [&] {
      grad32.copy_(grad16);
      adamw_step({p, std::span<const float>(grad32.data_ptr<float>(), n), m, v}, hp, ++step, kernel);
      out16.copy_(master);
    });
  }

  std::printf("AdamW step, %lld fp32 params, %u threads, isa %s, median of %d\n",
              static_cast<long long>(o.params), o.threads, std::string(isa_name(o.isa)).c_str(),
              o.repeats);
  std::printf("%-26s %10s %14s %10s\n", "variant", "seconds", "params/s", "GB/s");
  print_row("fused (ours)", ours_s, o.params);
  print_row("torch::optim::AdamW", torch_s, o.params);
  print_row("ceiling (traffic only)", ceiling_s, o.params);
  std::printf("bf16 gradient and weights: one pass %.4f s, three passes (widen, fp32 kernel, round) %.4f s: %.2fx\n",
              one_pass_s, three_passes_s, three_passes_s / one_pass_s);
  std::printf(
      "{\"params\": %lld, \"threads\": %u, \"isa\": \"%s\", \"ours_s\": %.6f, \"torch_s\": %.6f, "
      "\"ceiling_s\": %.6f, \"speedup_vs_torch\": %.3f, \"fraction_of_ceiling\": %.3f, "
      "\"ours_gbps\": %.2f, \"ceiling_gbps\": %.2f, \"bf16_one_pass_s\": %.6f, \"bf16_three_passes_s\": %.6f, "
      "\"bf16_speedup\": %.3f}\n",
      static_cast<long long>(o.params), o.threads, std::string(isa_name(o.isa)).c_str(), ours_s,
      torch_s, ceiling_s, torch_s / ours_s, ceiling_s / ours_s,
      double(o.params) * kBytesPerParam / ours_s / 1e9,
      double(o.params) * kBytesPerParam / ceiling_s / 1e9, one_pass_s, three_passes_s, three_passes_s / one_pass_s);
  return 0;
}
