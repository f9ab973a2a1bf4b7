// Linked with -Wl,--as-needed ahead of every library, as Ubuntu's and other distributions'
// compilers link by default: with libtorch exporting its own copies of libstdc++ functions, this
// is the link that bound std::filesystem::remove_all to libtorch and crashed. It removes a
// directory tree and makes a tensor; check_std_bindings.sh inspects how it was linked.
#include <ATen/ops/ones.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

int main() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("llmrdzv-link-probe-" + std::to_string(::getpid()));
  fs::create_directories(dir / "a" / "b");
  const auto removed = fs::remove_all(dir);
  const double sum = at::ones({3}).sum().item<double>();
  std::printf("removed %ju entries, tensor sum %.0f\n", static_cast<std::uintmax_t>(removed), sum);
  return removed == 3 && sum == 3 ? 0 : 1;
}
