// Bucketed observations for Prometheus histograms (see histogram.hpp).
#include "llmrdzv/metrics/histogram.hpp"

#include <algorithm>

namespace llmrdzv::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  // The first bound >= value: buckets are "less than or equal" (le).
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[std::size_t(bucket)];
  ++count_;
  sum_ += value;
}

std::uint64_t Histogram::cumulative(std::size_t i) const {
  std::uint64_t total = 0;
  for (std::size_t b = 0; b <= i && b < counts_.size(); ++b) total += counts_[b];
  return total;
}

const std::vector<double>& request_seconds_buckets() {
  static const std::vector<double> bounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                          5,      10,      30};
  return bounds;
}

const std::vector<double>& gathering_seconds_buckets() {
  static const std::vector<double> bounds{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                          2.5,   5,     10,   30,   60,  120,  300, 600};
  return bounds;
}

}  // namespace llmrdzv::metrics
