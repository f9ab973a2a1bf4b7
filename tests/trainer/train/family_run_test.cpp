// OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 through the real trainer, as GPT-2 goes:
// trained from a preset shrunk by --config_overrides; 2 ranks with optimizer offload and gradient checkpointing give the 1-rank
// losses; bf16 and fp16 runs on the CPU follow fp32 within 3% per step; a resumed run repeats the
// uninterrupted one exactly (dropout on); a saved model is
// fine-tuned, transformers' AutoModelForCausalLM computes our logits and loss from the result,
// and generate runs on it.
#include <ATen/ops/randint.h>
#include <torch/utils.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "llmrdzv/io/hf_model_dir.hpp"
#include "family_runs.hpp"
#include "run_checks.hpp"
#include "scratch_dir.hpp"
#include "trainer_process.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using trainer_test::expect_close;
using trainer_test::expect_ok;
using trainer_test::metric_series;
using trainer_test::run_trainer;
using trainer_test::RunResult;
namespace fs = std::filesystem;

namespace {

using namespace trainer_test::families;

}  // namespace

TEST_CASE("OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 train on 1 rank, and on 2 with optimizer offload and checkpointing, with the same losses",
          "[train][families][distributed]") {
  for (const Family& family : {kOpt, kLlama, kMistral, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3}) {
    DYNAMIC_SECTION(family.name) {
      ScratchDir dir("family-ranks");
      dir.write("corpus.txt", corpus());
      const auto reference = reference_losses(dir, family, "one");
      CHECK(reference.back() < reference.front() - 0.2);  // it learns (post-LN OPT slowly: 5.55 -> 5.22)
      CHECK_THAT(read_file(dir.file("one/config.json")), Catch::Contains(std::string("\"model_type\": \"") + family.name + "\""));

      // Per-device batch 2 on 2 ranks: the same global batch.
      const RunResult two = run_trainer(with(run_args(dir, family, dir.file("two"), without_dropout(family), 2),
                                             {"--nproc", "2", "--offload", "optimizer", "--gradient_checkpointing", "true"}));
      expect_ok(two);
      const auto got = metric_series(dir.file("two/metrics.jsonl"), "loss");
      REQUIRE(got.size() == reference.size());
      for (std::size_t step = 0; step < got.size(); ++step) {
        INFO(family.name << " step " << step + 1 << ": " << got[step] << " vs 1 rank " << reference[step]);
        CHECK(std::abs(got[step] - reference[step]) <= 1e-5 * std::abs(reference[step]));
      }
    }
  }
}

TEST_CASE("OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 train in bf16 and fp16 on the CPU following fp32",
          "[train][families][precision]") {
  for (const Family& family : {kOpt, kLlama, kMistral, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3}) {
    DYNAMIC_SECTION(family.name) {
      ScratchDir dir("family-precision");
      dir.write("corpus.txt", corpus());
      const auto reference = reference_losses(dir, family, "fp32", {"--use_cpu"});
      for (const char* precision : {"--bf16", "--fp16"}) {
        INFO(family.name << " " << precision);
        const std::string out = dir.file(precision + 2);
        const RunResult run = run_trainer(with(run_args(dir, family, out, without_dropout(family)), {"--use_cpu", precision}));
        expect_ok(run);
        CHECK_THAT(run.out, Catch::Contains(std::string("training on cpu in ") + (precision + 2)));
        expect_close(metric_series(out + "/metrics.jsonl", "loss"), reference, 0.03);
      }
    }
  }
}

TEST_CASE("OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 runs resumed from a checkpoint repeat the uninterrupted run exactly", "[train][families][resume]") {
  for (const Family& family : {kOpt, kLlama, kMistral, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3}) {
    DYNAMIC_SECTION(family.name) {
      ScratchDir dir("family-resume");
      dir.write("corpus.txt", corpus());
      expect_ok(run_trainer(run_args(dir, family, dir.file("full"))));  // OPT with its dropout 0.1
      const RunResult resumed = run_trainer(
          with(run_args(dir, family, dir.file("resumed")), {"--resume_from_checkpoint", dir.file("full/checkpoint-6")}));
      expect_ok(resumed);
      CHECK_THAT(resumed.out, Catch::Contains("at step 6"));
      const auto full = metric_series(dir.file("full/metrics.jsonl"), "loss");
      const auto again = metric_series(dir.file("resumed/metrics.jsonl"), "loss");
      REQUIRE(again.size() == 6);
      for (std::size_t i = 0; i < again.size(); ++i) CHECK(again[i] == full[6 + i]);
      CHECK(read_file(dir.file("resumed/model.safetensors")) == read_file(dir.file("full/model.safetensors")));
    }
  }
}

TEST_CASE("a saved OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 fine-tune, load in transformers with our loss, and generate", "[train][families][python]") {
  for (const Family& family : {kOpt, kLlama, kMistral, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3}) {
    DYNAMIC_SECTION(family.name) {
      ScratchDir dir("family-finetune");
      dir.write("corpus.txt", corpus());
      expect_ok(run_trainer(run_args(dir, family, dir.file("base"))));
      const std::string tuned = dir.file("tuned");
      const RunResult run = run_trainer({"--do_train", "--train_file", dir.file("corpus.txt"), "--validation_split_percentage", "0",
                                         "--model_name_or_path", dir.file("base"), "--output_dir", tuned, "--block_size", "16",
                                         "--per_device_train_batch_size", "2", "--max_steps", "4", "--learning_rate", "1e-3",
                                         "--logging_steps", "1", "--threads", "1"});
      expect_ok(run);
      CHECK(metric_series(tuned + "/metrics.jsonl", "loss").size() == 4);

      // Our logits and loss on a random batch, computed again by transformers from the directory.
      llmrdzv::model::CausalLm model = llmrdzv::io::load_hf_model(tuned);
      model->eval();
      CHECK(model->config().model_type() == family.name);
      const at::Tensor ids = at::randint(0, model->config().vocab_size(), {2, 16});
      at::NoGradGuard no_grad;
      const auto result = model->forward(ids, ids);
      llmrdzv::io::save_tensors(dir.path() / "ours.safetensors", {{"input_ids", ids}, {"labels", ids},
                                                                  {"logits", result.logits},
                                                                  {"loss", result.loss.reshape({1})}});
      const std::string check = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_HF_REFERENCE_SCRIPT + " check " + tuned +
                                " " + (dir.path() / "ours.safetensors").string();
      CHECK(std::system(check.c_str()) == 0);

      const RunResult generated = run_trainer({"generate", "--model", tuned, "--prompt", "rotary ", "--max_new_tokens", "12",
                                               "--temperature", "0"});
      expect_ok(generated);
      CHECK(generated.out.starts_with("rotary "));
      CHECK(generated.out.size() > std::string("rotary \n").size());
    }
  }
}
