// The shared family runs of family_runs.hpp.
#include "family_runs.hpp"

#include "run_checks.hpp"
#include "trainer_process.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

namespace trainer_test::families {

using llmrdzv::testing::ScratchDir;

std::string corpus() {
  return trainer_test::word_corpus({"rotary", "norm", "gate", "heads", "group", "learned", "offset", "project"}, 5, 900, 9);
}

std::vector<std::string> run_args(const ScratchDir& dir, const Family& family, const std::string& out,
                                  const std::string& extra_overrides, int per_device) {
  return {"--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0",
          "--output_dir", out, "--token_cache_dir", dir.file("cache"), "--config_name", family.preset,
          "--config_overrides", family.overrides + extra_overrides, "--block_size", "16",
          "--per_device_train_batch_size", std::to_string(per_device), "--gradient_accumulation_steps", "2",
          "--learning_rate", "3e-3",
          "--weight_decay", "0.1", "--max_grad_norm", "0.5", "--warmup_steps", "2", "--max_steps", "12",
          "--logging_steps", "1", "--save_steps", "6", "--threads", "1", "--seed", "4"};
}

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

std::string without_dropout(const Family& family) { return family.name == std::string("opt") ? ",dropout=0.0" : ""; }

std::vector<double> reference_losses(const ScratchDir& dir, const Family& family, const std::string& out,
                                     std::initializer_list<std::string> extra, int per_device) {
  expect_ok(run_trainer(with(run_args(dir, family, dir.file(out), without_dropout(family), per_device), extra)));
  const auto losses = metric_series(dir.file(out + "/metrics.jsonl"), "loss");
  REQUIRE(losses.size() == 12);
  return losses;
}

}  // namespace trainer_test::families
