// What the end-to-end trainer tests check of a finished run: that it succeeded (its output shown
// when not) and one metric over its training records in metrics.jsonl.
#pragma once

#include <string>
#include <vector>

#include "trainer_process.hpp"

namespace trainer_test {

// REQUIREs exit code 0, with the run's stdout and stderr in the failure message.
void expect_ok(const RunResult& run);

// `key` ("loss", "grad_norm", ...) of every training record (those with "loss" and "step"), in
// file order; REQUIREs every such record to have it.
std::vector<double> metric_series(const std::string& metrics_path, const char* key);

}  // namespace trainer_test
