// What a TensorBoard event costs the trainer per logging step, against the baseline every logging
// step already pays in the same run: its metrics.jsonl record. Both are written as the trainer
// writes them (the same seven training values, flushed each time), N times into a scratch
// directory; prints microseconds per step for each, the ratio, and one JSON line. Divide the
// TensorBoard figure by a training step's time for the overhead on throughput.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "llmrdzv/tensorboard/event_writer.hpp"
#include "llmrdzv/train/metrics_log.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace json = llmrdzv::json;

template <class Body>
double microseconds_per_call(int count, Body body) {
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) body(i);
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (steps < 1) {
    std::fprintf(stderr, "usage: tensorboard-bench [STEPS]  (default 20000)\n");
    return 2;
  }
  char pattern[] = "/tmp/tensorboard-bench-XXXXXX";
  if (!mkdtemp(pattern)) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::filesystem::path dir(pattern);
  double jsonl_us = 0, tensorboard_us = 0;
  {
    llmrdzv::train::MetricsLog metrics((dir / "metrics.jsonl").string());
    jsonl_us = microseconds_per_call(steps, [&](int step) {
      metrics.write({{"step", std::int64_t{step}}, {"epoch", 0.01 * step}, {"loss", 3.0 + 1.0 / (step + 1)},
                     {"learning_rate", 3e-4}, {"grad_norm", 0.75}, {"tokens_per_second", 4096.5},
                     {"step_time_s", 0.5}, {"comm_wait_s", 0.0125}});
    });
    llmrdzv::tensorboard::EventWriter events(dir / "runs", std::nullopt);
    tensorboard_us = microseconds_per_call(steps, [&](int step) {
      const std::vector<llmrdzv::tensorboard::Scalar> scalars{
          {"train/loss", 3.0 + 1.0 / (step + 1)}, {"train/learning_rate", 3e-4}, {"train/grad_norm", 0.75},
          {"train/tokens_per_second", 4096.5}, {"train/step_time", 0.5}, {"train/comm_wait", 0.0125},
          {"train/epoch", 0.01 * step}};
      events.scalars(step, scalars);
    });
  }
  std::filesystem::remove_all(dir);
  std::printf("%d logging steps, each flushed to disk\n", steps);
  std::printf("%-28s %10s\n", "per logging step", "us");
  std::printf("%-28s %10.2f\n", "metrics.jsonl record", jsonl_us);
  std::printf("%-28s %10.2f\n", "TensorBoard event", tensorboard_us);
  std::printf("{\"steps\": %d, \"jsonl_us\": %.3f, \"tensorboard_us\": %.3f, \"tensorboard_over_jsonl\": %.3f}\n", steps,
              jsonl_us, tensorboard_us, tensorboard_us / jsonl_us);
  return 0;
}
