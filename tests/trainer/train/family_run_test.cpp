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

struct Family {
  const char* name;
  const char* preset;
  std::string overrides;  // a tiny model of the preset's kind
};

// opt-350m's kind (post-LN, embeddings projected 24 <-> 40) and a Llama with grouped-query
// attention (6 heads on 2 key/value heads), odd widths both.
const Family kOpt{"opt", "opt-350m",
                  "num_hidden_layers=2,hidden_size=40,num_attention_heads=5,ffn_dim=56,word_embed_proj_dim=24,"
                  "max_position_embeddings=32"};
const Family kLlama{"llama", "smollm-135m",
                    "num_hidden_layers=2,hidden_size=48,num_attention_heads=6,num_key_value_heads=2,"
                    "intermediate_size=80,max_position_embeddings=32"};
// Mistral's window (5) and Qwen2's (6, from layer 1 on) shorter than the 16-token blocks; Qwen3 with
// head_dim 12 against hidden 40 / 4 heads.
const Family kMistral{"mistral", "mistral-7b",
                      "num_hidden_layers=2,hidden_size=48,num_attention_heads=6,num_key_value_heads=2,"
                      "intermediate_size=80,max_position_embeddings=32,sliding_window=5"};
const Family kQwen2{"qwen2", "qwen2.5-0.5b",
                    "num_hidden_layers=2,hidden_size=48,num_attention_heads=6,num_key_value_heads=2,"
                    "intermediate_size=80,max_position_embeddings=32,use_sliding_window=true,sliding_window=6,"
                    "max_window_layers=1"};
const Family kQwen3{"qwen3", "qwen3-0.6b",
                    "num_hidden_layers=2,hidden_size=40,num_attention_heads=4,num_key_value_heads=2,head_dim=12,"
                    "intermediate_size=72,max_position_embeddings=32"};
// Phi-3's fused projections with a window of 6; Gemma 2 shrunk with its soft-caps and windows kept.
const Family kPhi3{"phi3", "phi-3-mini",
                   "num_hidden_layers=2,hidden_size=40,num_attention_heads=5,num_key_value_heads=1,"
                   "intermediate_size=56,max_position_embeddings=32,sliding_window=6"};
const Family kGemma2{"gemma2", "gemma-2-2b",
                     "num_hidden_layers=3,hidden_size=48,num_attention_heads=4,num_key_value_heads=2,head_dim=16,"
                     "intermediate_size=80,max_position_embeddings=32,sliding_window=5,query_pre_attn_scalar=16"};

// Gemma 3 with a local layer pattern of 3 (layers 0, 1 and 3 windowed, 2 global) and a local rope
// base apart from the global one.
const Family kGemma3{"gemma3_text", "gemma-3-1b",
                     "num_hidden_layers=4,hidden_size=48,num_attention_heads=4,num_key_value_heads=2,head_dim=16,"
                     "intermediate_size=80,max_position_embeddings=32,sliding_window=5,query_pre_attn_scalar=16,"
                     "sliding_window_pattern=3,rope_local_base_freq=100"};

std::string corpus() {
  return trainer_test::word_corpus({"rotary", "norm", "gate", "heads", "group", "learned", "offset", "project"}, 5, 900, 9);
}

std::vector<std::string> run_args(const ScratchDir& dir, const Family& family, const std::string& out,
                                  const std::string& extra_overrides = "", int per_device = 4) {
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

// OPT's dropout off, so that two runs compare step by step (the other families train without).
std::string without_dropout(const Family& family) { return family.name == std::string("opt") ? ",dropout=0.0" : ""; }

// The losses of a 1-rank fp32 run of `family` into dir/out with `extra` arguments, checked to have
// run all 12 steps.
std::vector<double> reference_losses(const ScratchDir& dir, const Family& family, const std::string& out,
                                     std::initializer_list<std::string> extra = {}) {
  expect_ok(run_trainer(with(run_args(dir, family, dir.file(out), without_dropout(family)), extra)));
  const auto losses = metric_series(dir.file(out + "/metrics.jsonl"), "loss");
  REQUIRE(losses.size() == 12);
  return losses;
}

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
