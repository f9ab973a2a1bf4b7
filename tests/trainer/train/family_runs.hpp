// The run the end-to-end trainer tests share for each tiny model family (tiny_families.hpp): 12
// steps of 16-token blocks from --config_name with --config_overrides, gradient accumulation,
// clipping and weight decay.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "scratch_dir.hpp"
#include "tiny_families.hpp"

namespace trainer_test::families {

// A corpus of a few words the tiny models learn within 12 steps.
std::string corpus();

// The shared run of `family` into `out` (its per-device batch `per_device`, 2 micro-batches).
std::vector<std::string> run_args(const llmrdzv::testing::ScratchDir& dir, const Family& family, const std::string& out,
                                  const std::string& extra_overrides = "", int per_device = 4);

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more);

// OPT's dropout off, so that two runs compare step by step (the other families train without).
std::string without_dropout(const Family& family);

// The losses of a 1-rank fp32 run of `family` into dir/out with `extra` arguments, checked to have
// run all 12 steps (per-device batch `per_device`).
std::vector<double> reference_losses(const llmrdzv::testing::ScratchDir& dir, const Family& family, const std::string& out,
                                     std::initializer_list<std::string> extra = {}, int per_device = 4);

}  // namespace trainer_test::families
