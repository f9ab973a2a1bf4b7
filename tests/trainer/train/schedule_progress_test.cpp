// LR schedules against transformers' formulas at hand-computed points, the progress line format,
// and metrics.jsonl records.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <unistd.h>
#include <vector>

#include "llmrdzv/train/lr_schedule.hpp"
#include "llmrdzv/train/metrics_log.hpp"
#include "llmrdzv/train/progress.hpp"

using namespace llmrdzv::train;

TEST_CASE("linear schedule warms up from 0 then decays to 0", "[schedule]") {
  const LrSchedule s{LrSchedulerType::linear, 1e-3, 10, 110};
  CHECK(s.at(0) == 0.0);
  CHECK(s.at(5) == Approx(5e-4));
  CHECK(s.at(10) == Approx(1e-3));
  CHECK(s.at(60) == Approx(5e-4));
  CHECK(s.at(110) == 0.0);
  CHECK(s.at(200) == 0.0);
}

// DeepSpeed's curves (--deepspeed with a "scheduler" block). The expected rates are what
// DeepSpeed 0.19.8's WarmupLR, WarmupDecayLR and WarmupCosineLR return from get_lr() at
// last_batch_iteration = i (deepspeed.runtime.lr_schedules, run once on this machine: DeepSpeed
// ships only as a source package that compiles against torch, too heavy for the test venv).
TEST_CASE("DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR curves", "[schedule][deepspeed]") {
  const auto check = [](const LrSchedule& s, const std::vector<double>& deepspeed) {
    for (std::size_t i = 0; i < deepspeed.size(); ++i) {
      INFO("iteration " << i);
      CHECK(s.at(static_cast<std::int64_t>(i)) == Approx(deepspeed[i]).epsilon(1e-12).margin(1e-18));
    }
  };
  DeepSpeedSchedule warmup{.type = DeepSpeedScheduler::warmup_lr, .log_warmup = true, .warmup_min_lr = 1e-4};
  check(LrSchedule{LrSchedulerType::linear, 1e-3, 5, 100, warmup},
        {0.0001, 0.00048760890226605375, 0.0007143455750373869, 0.0008752178045321076, 0.001, 0.001, 0.001, 0.001});
  // warmup_num_steps 1 warms up over 2 iterations, as DeepSpeed clamps it.
  warmup = {.type = DeepSpeedScheduler::warmup_lr, .log_warmup = false};
  check(LrSchedule{LrSchedulerType::linear, 1e-3, 1, 100, warmup}, {0.0, 0.0005, 0.001, 0.001});
  const DeepSpeedSchedule decay{.type = DeepSpeedScheduler::warmup_decay_lr, .log_warmup = false};
  check(LrSchedule{LrSchedulerType::cosine, 3e-4, 3, 12, decay},  // the kind is DeepSpeed's, whatever --lr_scheduler_type says
        {0.0, 9.999999999999999e-05, 0.00019999999999999998, 0.0003, 0.0002666666666666666, 0.0002333333333333333,
         0.00019999999999999998, 0.00016666666666666666, 0.0001333333333333333, 9.999999999999999e-05,
         6.666666666666666e-05, 3.333333333333333e-05, 0.0, 0.0});
  const DeepSpeedSchedule cosine{.type = DeepSpeedScheduler::warmup_cosine_lr, .log_warmup = true,
                                 .warmup_min_ratio = 0.1, .cos_min_ratio = 0.05};
  check(LrSchedule{LrSchedulerType::linear, 2e-3, 4, 10, cosine},
        {0.0002, 0.0011, 0.0016264662506490406, 0.002, 0.001872724133595217, 0.0015249999999999999,
         0.0010500000000000002, 0.0005750000000000002, 0.00022727586640478324, 0.0001, 0.0001, 0.0001});
}

TEST_CASE("cosine schedule follows half a cosine after warmup", "[schedule]") {
  const LrSchedule s{LrSchedulerType::cosine, 2.0, 0, 100};
  CHECK(s.at(0) == Approx(2.0));
  CHECK(s.at(50) == Approx(1.0));
  CHECK(s.at(25) == Approx(1.0 + std::cos(std::numbers::pi * 0.25)));
  CHECK(s.at(100) == Approx(0.0).margin(1e-12));
}

TEST_CASE("constant_with_warmup keeps the peak after warmup, and constant ignores warmup as transformers does",
          "[schedule]") {
  const LrSchedule warm{LrSchedulerType::constant_with_warmup, 0.5, 4, 100};
  CHECK(warm.at(0) == 0.0);
  CHECK(warm.at(2) == Approx(0.25));
  CHECK(warm.at(4) == 0.5);
  CHECK(warm.at(99) == 0.5);
  const LrSchedule flat{LrSchedulerType::constant, 0.5, 4, 100};  // get_constant_schedule: no warmup
  CHECK(flat.at(0) == 0.5);
  CHECK(flat.at(2) == 0.5);
  CHECK(flat.at(99) == 0.5);
}

TEST_CASE("warmup steps win over the ratio, which rounds up", "[schedule]") {
  CHECK(resolve_warmup_steps(7, 0.5, 100) == 7);
  CHECK(resolve_warmup_steps(0, 0.05, 30) == 2);
  CHECK(resolve_warmup_steps(0, 0.0, 30) == 0);
}

TEST_CASE("progress line and durations", "[progress]") {
  CHECK(format_duration(45.4) == "45s");
  CHECK(format_duration(123) == "2m03s");
  CHECK(format_duration(3723) == "1h02m03s");
  CHECK(format_duration(-1) == "?");
  const StepReport r{12, 300, 3.21044, 4e-4, 1234.4, 123};
  CHECK(format_step(r) == "step 12/300 | loss 3.2104 | lr 4.00e-04 | 1234 tok/s | ETA 2m03s");
}

TEST_CASE("progress prints plain lines only at logging steps when not live", "[progress]") {
  std::FILE* out = std::tmpfile();
  {
    ProgressDisplay display(out, false);
    display.step({1, 3, 1.0, 0.1, 10, 2}, false);
    display.step({2, 3, 2.0, 0.1, 10, 1}, true);
    display.message("eval_loss 1.5");
  }
  std::rewind(out);
  char buffer[512] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, out);
  std::fclose(out);
  CHECK(std::string(buffer, n) == "step 2/3 | loss 2.0000 | lr 1.00e-01 | 10 tok/s | ETA 1s\neval_loss 1.5\n");
}

TEST_CASE("progress rewrites one line in live mode", "[progress]") {
  std::FILE* out = std::tmpfile();
  {
    ProgressDisplay display(out, true);
    display.step({1, 2, 1.0, 0.1, 10, 2}, false);
    display.step({2, 2, 2.0, 0.1, 10, 0}, false);
  }
  std::rewind(out);
  char buffer[512] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, out);
  std::fclose(out);
  CHECK(std::string(buffer, n) ==
        "step 1/2 | loss 1.0000 | lr 1.00e-01 | 10 tok/s | ETA 2s\r\033[Kstep 2/2 | loss 2.0000 | lr 1.00e-01 | 10 tok/s | ETA 0s\n");
}

TEST_CASE("metrics.jsonl appends one JSON object per line, exact numbers, null for NaN", "[metrics]") {
  const std::string path = "/tmp/trainer-metrics-" + std::to_string(getpid()) + ".jsonl";
  {
    MetricsLog log(path);
    log.write({{"step", std::int64_t{3}}, {"loss", metric(0.1f * 3)}, {"bad", metric(NAN)}});
  }
  MetricsLog(path).write({{"step", std::int64_t{4}}});
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  CHECK(first == "{\"step\":3,\"loss\":0.30000001192092896,\"bad\":null}");
  CHECK(second == "{\"step\":4}");
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(MetricsLog("/nonexistent/dir/m.jsonl"), "cannot open metrics file '/nonexistent/dir/m.jsonl' for writing");
}
