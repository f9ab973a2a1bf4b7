// What the end-to-end trainer tests share: a deterministic corpus to train on, and what they check
// of a finished run (that it succeeded, its output shown when not; one metric over its training
// records in metrics.jsonl; loss curves that agree within a tolerance).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "trainer_process.hpp"

namespace trainer_test {

// REQUIREs exit code 0, with the run's stdout and stderr in the failure message.
void expect_ok(const RunResult& run);

// `key` ("loss", "grad_norm", ...) of every training record (those with "loss" and "step"), in
// file order; REQUIREs every such record to have it.
std::vector<double> metric_series(const std::string& metrics_path, const char* key);

// Each step's loss within `relative` of the reference's (CHECKs, naming the step).
void expect_close(const std::vector<double>& got, const std::vector<double>& reference, double relative);

// `count` words drawn from `words` by a fixed LCG seeded with `seed`, a ".\n" after every
// `per_line`-th word: text with a small vocabulary a tiny model learns within a few steps.
std::string word_corpus(std::initializer_list<const char*> words, unsigned seed, int count, int per_line);

}  // namespace trainer_test
