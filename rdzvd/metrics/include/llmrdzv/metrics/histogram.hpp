// A Prometheus histogram's state: observations counted into buckets with fixed upper bounds (the
// +Inf bucket implied), their sum and their count. Not thread-safe: its owner serialises (the
// core's lock, the server's RPC-metrics mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmrdzv::metrics {

class Histogram {
 public:
  // `upper_bounds` ascending and finite.
  explicit Histogram(std::vector<double> upper_bounds);

  void observe(double value);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Observations <= upper_bounds()[i]: cumulative, as the exposition format counts buckets.
  std::uint64_t cumulative(std::size_t i) const;
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

// Bucket bounds in seconds for request latencies (100 us .. 30 s) and for waits that last as long
// as a rendezvous gathers (1 ms .. 10 min).
const std::vector<double>& request_seconds_buckets();
const std::vector<double>& gathering_seconds_buckets();

}  // namespace llmrdzv::metrics
