// What rank 0 shows while training: one live, rewritten line on a terminal, or a plain line per
// logging interval when the output is a pipe or a file (logs, CI, tests).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace llmrdzv::train {

struct StepReport {
  std::int64_t step = 0;  // optimizer steps done
  std::int64_t total_steps = 0;
  double loss = 0;  // mean over the steps since the previous report
  double learning_rate = 0;
  double tokens_per_second = 0;
  double eta_seconds = 0;
};

// "1h02m03s", "2m03s", "45s".
std::string format_duration(double seconds);
// "step 12/300 | loss 3.2104 | lr 4.00e-04 | 1234 tok/s | ETA 2m03s"
std::string format_step(const StepReport& report);

class ProgressDisplay {
 public:
  // `live`: rewrite one line in place (for a terminal); otherwise print only at logging steps.
  ProgressDisplay(std::FILE* out, bool live);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // Every step. `logging_step` makes the line permanent (on a terminal) or prints it (elsewhere).
  void step(const StepReport& report, bool logging_step);
  // A message of its own (evaluation results, checkpoint saved): clears the live line first.
  void message(const std::string& text);
  // Whether every step redraws a line (a terminal), not only logging steps.
  bool live() const { return live_; }

 private:
  void clear_live_line();

  std::FILE* out_;
  bool live_;
  bool line_open_ = false;
};

// True when `out` is a terminal.
bool is_terminal(std::FILE* out);

}  // namespace llmrdzv::train
