// Checks on finished trainer runs (run_checks.hpp).
#include "run_checks.hpp"

#include <catch2/catch.hpp>

#include <sstream>

#include "llmrdzv/io/json.hpp"
#include "scratch_dir.hpp"

namespace trainer_test {

void expect_ok(const RunResult& run) {
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  REQUIRE(run.exit_code == 0);
}

std::vector<double> metric_series(const std::string& metrics_path, const char* key) {
  std::vector<double> out;
  std::istringstream lines(llmrdzv::testing::read_file(metrics_path));
  for (std::string line; std::getline(lines, line);) {
    const auto record = llmrdzv::json::parse(line);
    if (!record.find("loss") || !record.find("step")) continue;
    const auto* value = record.find(key);
    INFO(line);
    REQUIRE(value);
    out.push_back(value->as_double());
  }
  return out;
}

}  // namespace trainer_test
