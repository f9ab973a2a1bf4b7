// The real trainer on --dataset_name: a save_to_disk dataset and a tokenizer made by the datasets
// and tokenizers libraries (run_clm_oracle.py), trained on and evaluated; the evaluation loss
// equals transformers' loss on run_clm.py's blocks of the validation split (dataset_eval_oracle.py),
// and a second run reuses the token cache.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"
#include "trainer_process.hpp"

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_ok;
using trainer_test::run_trainer;
using trainer_test::RunResult;

namespace {

std::string corpus(int rows, unsigned seed) {
  static const char* kWords[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "\\n"};
  std::string out;
  for (int i = 0; i < rows; ++i) {
    std::string text;
    for (int w = 0; w < 3 + static_cast<int>((seed * 7 + static_cast<unsigned>(i) * 13) % 9); ++w) {
      seed = seed * 1664525u + 1013904223u;
      text += (w ? " " : "") + std::string(kWords[(seed >> 16) % 7]);
    }
    out += "{\"text\": \"" + text + "\"}\n";
  }
  return out;
}

}  // namespace

TEST_CASE("trainer --dataset_name evaluates to transformers' loss on run_clm.py's blocks", "[datasets][run]") {
  const ScratchDir dir("dataset-run");
  dir.write("corpus.jsonl", corpus(1500, 11));
  const std::string make = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_SOURCE_DIR +
                           "/tests/trainer/datasets/run_clm_oracle.py " + dir.path().string() + " 16 > " +
                           dir.file("make.log") + " 2>&1";
  REQUIRE(std::system(make.c_str()) == 0);
  // The save_to_disk dataset has only a train split: --validation_split_percentage 10 holds out
  // train[:10%] as run_clm.py does. Train a little, then evaluate the result.
  const std::vector<std::string> common = {"--dataset_name", dir.file("saved"), "--validation_split_percentage", "10",
                                           "--block_size", "16", "--threads", "1", "--report_to", "none",
                                           "--token_cache_dir", dir.file("tokens")};
  std::vector<std::string> train = {"--do_train", "--output_dir", dir.file("model"), "--tokenizer_name",
                                    dir.file("tokenizer-gpt2"), "--config_overrides", "n_layer=1,n_head=2,n_embd=16,n_positions=16",
                                    "--max_steps", "4", "--save_strategy", "no", "--preprocessing_num_workers", "2"};
  train.insert(train.end(), common.begin(), common.end());
  const RunResult trained = run_trainer(train);
  expect_ok(trained);
  CHECK_THAT(trained.err, Catch::Contains("a DatasetDict.save_to_disk folder") && Catch::Contains("train[10%:]: 1350 rows") &&
                              Catch::Contains("read with Apache Arrow"));

  std::vector<std::string> eval = {"--do_eval", "--output_dir", dir.file("eval"), "--model_name_or_path", dir.file("model")};
  eval.insert(eval.end(), common.begin(), common.end());
  const RunResult evaluated = run_trainer(eval);
  expect_ok(evaluated);
  CHECK_THAT(evaluated.err, Catch::Contains("train[:10%]: 150 rows"));
  const double ours = llmrdzv::json::parse(read_file(dir / "eval" / "eval_results.json")).find("eval_loss")->as_double();

  // transformers on run_clm's blocks of train[:10%] (the first 150 rows).
  const std::string oracle = std::string(LLMRDZV_TEST_PYTHON) + " -c \"import datasets; d = datasets.load_from_disk('" +
                             dir.file("saved") + "'); datasets.DatasetDict({'validation': d['train'].select(range(150))})"
                             ".save_to_disk('" + dir.file("held-out") + "')\" > /dev/null 2>&1 && " + LLMRDZV_TEST_PYTHON + " " +
                             LLMRDZV_SOURCE_DIR + "/tests/trainer/train/dataset_eval_oracle.py " + dir.file("model") + " " +
                             dir.file("held-out") + " validation 16 > " + dir.file("oracle.txt") + " 2> " + dir.file("oracle.log");
  REQUIRE(std::system(oracle.c_str()) == 0);
  long long blocks = 0;
  double theirs = 0;
  REQUIRE(std::sscanf(read_file(dir / "oracle.txt").c_str(), "%lld %lf", &blocks, &theirs) == 2);
  CHECK(blocks > 10);
  CHECK_THAT(evaluated.err, Catch::Contains("-> " + std::to_string(blocks) + " blocks of 16 tokens"));
  CHECK(ours == Approx(theirs).epsilon(1e-5));

  // The same command again reuses the token cache: no dataset line, the same loss.
  eval[2] = dir.file("eval-again");
  const RunResult again = run_trainer(eval);
  expect_ok(again);
  CHECK_THAT(again.err, !Catch::Contains("rows of column"));
  CHECK(llmrdzv::json::parse(read_file(dir / "eval-again" / "eval_results.json")).find("eval_loss")->as_double() == ours);
}
