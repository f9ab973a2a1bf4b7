// The progress line of progress.hpp: formatting and the terminal/pipe behaviour.
#include "llmrdzv/train/progress.hpp"

#include <unistd.h>

#include <cmath>

namespace llmrdzv::train {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<long long>(std::llround(seconds));
  char text[48];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm%02llds", total / 3600, total / 60 % 60, total % 60);
  } else if (total >= 60) {
    std::snprintf(text, sizeof text, "%lldm%02llds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%llds", total);
  }
  return text;
}

std::string format_step(const StepReport& r) {
  char text[160];
  std::snprintf(text, sizeof text, "step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | ETA %s",
                static_cast<long long>(r.step), static_cast<long long>(r.total_steps), r.loss,
                r.learning_rate, r.tokens_per_second, format_duration(r.eta_seconds).c_str());
  return text;
}

bool is_terminal(std::FILE* out) { return isatty(fileno(out)) == 1; }

ProgressDisplay::ProgressDisplay(std::FILE* out, bool live) : out_(out), live_(live) {}

ProgressDisplay::~ProgressDisplay() {
  if (line_open_) std::fputc('\n', out_);
}

void ProgressDisplay::clear_live_line() {
  if (line_open_) std::fputs("\r\033[K", out_);
  line_open_ = false;
}

void ProgressDisplay::step(const StepReport& report, bool logging_step) {
  const std::string line = format_step(report);
  if (live_) {
    clear_live_line();
    std::fputs(line.c_str(), out_);
    if (logging_step) {
      std::fputc('\n', out_);
    } else {
      line_open_ = true;
    }
  } else if (logging_step) {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressDisplay::message(const std::string& text) {
  clear_live_line();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace llmrdzv::train
