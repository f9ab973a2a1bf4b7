// The real trainer on --dataset_name: a save_to_disk dataset and a tokenizer made by the datasets
// and tokenizers libraries (run_clm_oracle.py), trained on and evaluated; the evaluation loss
// equals transformers' loss on run_clm.py's blocks of the validation split (dataset_eval_oracle.py),
// and a second run reuses the token cache; and the newer families on tokenizers of their own kinds.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
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

// JSON Lines rows of words (`extra` words too: chat tokens, non-ASCII text), and the same rows as
// plain text lines for training a tokenizer.
struct Rows {
  std::string jsonl;
  std::string text;
};
Rows corpus_rows(int rows, unsigned seed, std::vector<std::string> extra = {}) {
  std::vector<std::string> words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "\\n"};
  words.insert(words.end(), extra.begin(), extra.end());
  Rows out;
  for (int i = 0; i < rows; ++i) {
    std::string text;
    for (int w = 0; w < 3 + static_cast<int>((seed * 7 + static_cast<unsigned>(i) * 13) % 9); ++w) {
      seed = seed * 1664525u + 1013904223u;
      text += (w ? " " : "") + words[(seed >> 16) % words.size()];
    }
    out.jsonl += "{\"text\": \"" + text + "\"}\n";
    out.text += text + "\n";
  }
  return out;
}
std::string corpus(int rows, unsigned seed) { return corpus_rows(rows, seed).jsonl; }

// transformers' mean loss on run_clm.py's blocks of the first `rows` rows of dir/saved's train
// split, with the model (and tokenizer) in `model`: "<blocks> <loss>".
std::pair<long long, double> transformers_eval(const ScratchDir& dir, const std::string& model, int rows) {
  const std::string oracle = std::string(LLMRDZV_TEST_PYTHON) + " -c \"import datasets; d = datasets.load_from_disk('" +
                             dir.file("saved") + "'); datasets.DatasetDict({'validation': d['train'].select(range(" +
                             std::to_string(rows) + "))}).save_to_disk('" + dir.file("held-out") +
                             "')\" > /dev/null 2>&1 && " + LLMRDZV_TEST_PYTHON + " " + LLMRDZV_SOURCE_DIR +
                             "/tests/trainer/train/dataset_eval_oracle.py " + model + " " + dir.file("held-out") +
                             " validation 16 > " + dir.file("oracle.txt") + " 2> " + dir.file("oracle.log");
  INFO(oracle);
  REQUIRE(std::system(oracle.c_str()) == 0);
  long long blocks = 0;
  double loss = 0;
  REQUIRE(std::sscanf(read_file(dir / "oracle.txt").c_str(), "%lld %lf", &blocks, &loss) == 2);
  return {blocks, loss};
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
                              Catch::Contains("per 1000 rows of each of 2 map shards") &&
                              Catch::Contains("read with Apache Arrow"));

  std::vector<std::string> eval = {"--do_eval", "--output_dir", dir.file("eval"), "--model_name_or_path", dir.file("model")};
  eval.insert(eval.end(), common.begin(), common.end());
  const RunResult evaluated = run_trainer(eval);
  expect_ok(evaluated);
  CHECK_THAT(evaluated.err, Catch::Contains("train[:10%]: 150 rows"));
  const double ours = llmrdzv::json::parse(read_file(dir / "eval" / "eval_results.json")).find("eval_loss")->as_double();

  // transformers on run_clm's blocks of train[:10%] (the first 150 rows).
  const auto [blocks, theirs] = transformers_eval(dir, dir.file("model"), 150);
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

// The newer families with their own kind of tokenizer (made by the tokenizers library the way
// their makers save them: Qwen2's NFC byte-level BPE, Gemma's and Phi-3's SentencePiece-style BPE,
// Phi-3's chat tokens taking the spaces after them along), trained from a preset on
// --dataset_name with --tokenizer_name: the exported model and tokenizer evaluate in transformers
// to our loss on run_clm.py's blocks, so our ids are HF's through the whole data pipeline.
TEST_CASE("Qwen2, Gemma 3 and Phi-3 train on their own tokenizers, and transformers evaluates the export to our loss",
          "[datasets][run][families]") {
  struct Family {
    const char* tokenizer;
    const char* preset;
    const char* overrides;
  };
  for (const Family& family :
       {Family{"qwen2", "qwen2.5-0.5b", "num_hidden_layers=1,hidden_size=32,num_attention_heads=4,num_key_value_heads=2,"
                                        "intermediate_size=48,max_position_embeddings=32"},
        Family{"gemma", "gemma-3-1b", "num_hidden_layers=2,hidden_size=32,num_attention_heads=2,num_key_value_heads=1,"
                                      "head_dim=16,intermediate_size=48,max_position_embeddings=32,sliding_window=5,"
                                      "query_pre_attn_scalar=16,sliding_window_pattern=2"},
        Family{"phi3", "phi-3-mini", "num_hidden_layers=1,hidden_size=32,num_attention_heads=4,num_key_value_heads=2,"
                                     "intermediate_size=48,max_position_embeddings=32"}}) {
    DYNAMIC_SECTION(family.tokenizer) {
      const ScratchDir dir("family-tokenizer-run");
      const Rows rows = corpus_rows(800, 5, {"caf\xc3\xa9", "na\xcc\x88ive", "\xe4\xb8\xad\xe6\x96\x87", "<|end|>", "<|assistant|>"});
      dir.write("corpus.jsonl", rows.jsonl);
      dir.write("corpus.txt", rows.text);
      dir.write("cases", "");
      const std::string make = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_SOURCE_DIR +
                               "/tests/trainer/datasets/run_clm_oracle.py " + dir.path().string() + " 16 > " +
                               dir.file("make.log") + " 2>&1 && " + LLMRDZV_TEST_PYTHON + " " + LLMRDZV_SOURCE_DIR +
                               "/tests/trainer/tokenizer/hf_tokenizer_oracle.py " + dir.file("tokenizer") + " " +
                               dir.file("cases") + " " + dir.file("cases.out") + " --train " + dir.file("corpus.txt") +
                               " --vocab-size 500 --make " + family.tokenizer + " >> " + dir.file("make.log") + " 2>&1";
      INFO(make);
      REQUIRE(std::system(make.c_str()) == 0);
      const RunResult run = run_trainer({"--do_train", "--do_eval", "--dataset_name", dir.file("saved"),
                                         "--validation_split_percentage", "10", "--tokenizer_name", dir.file("tokenizer"),
                                         "--config_name", family.preset, "--config_overrides", family.overrides,
                                         "--block_size", "16", "--max_steps", "3", "--save_strategy", "no", "--threads", "1",
                                         "--report_to", "none", "--output_dir", dir.file("model")});
      expect_ok(run);
      const double ours = llmrdzv::json::parse(read_file(dir / "model" / "all_results.json")).find("eval_loss")->as_double();
      const auto [blocks, theirs] = transformers_eval(dir, dir.file("model"), 80);
      CHECK(blocks > 5);
      CHECK_THAT(run.err, Catch::Contains("train[:10%]: 80 rows") && Catch::Contains("-> " + std::to_string(blocks) + " blocks of 16"));
      CHECK(ours == Approx(theirs).epsilon(1e-5));
    }
  }
}
