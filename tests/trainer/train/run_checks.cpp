// Checks on finished trainer runs (run_checks.hpp).
#include "run_checks.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "llmrdzv/io/json.hpp"
#include "scratch_dir.hpp"

namespace trainer_test {

void expect_ok(const RunResult& run) {
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  REQUIRE(run.exit_code == 0);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& reference, double relative) {
  REQUIRE(got.size() == reference.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("step " << i + 1 << ": " << got[i] << " vs " << reference[i]);
    CHECK(std::abs(got[i] - reference[i]) <= relative * reference[i]);
  }
}

std::string word_corpus(std::initializer_list<const char*> words, unsigned seed, int count, int per_line) {
  const std::vector<const char*> list(words);
  std::string text;
  unsigned state = seed;
  for (int i = 0; i < count; ++i) {
    state = state * 1103515245u + 12345u;
    text += list[(state >> 16) % list.size()];
    text += (i % per_line == per_line - 1) ? ".\n" : " ";
  }
  return text;
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
