// Training checkpoints through the real model, engine and io: a restored model, optimizer, RNG and
// loop state equal what was saved; checkpoints of another model shape or with damaged files are
// refused naming the checkpoint; `latest` skips broken ones; ranks prune only after all saved.
// And generate (greedy, top-k sampling) and the optimizer's decay groups.
#include <torch/nn/utils/clip_grad.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

#include <cmath>
#include <filesystem>
#include <set>

#include "checkpoint_state.hpp"
#include "model_setup.hpp"
#include "llmrdzv/engine/single_process_engine.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "llmrdzv/train/generate.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv;
using namespace llmrdzv::engine;
using namespace llmrdzv::train;
namespace fs = std::filesystem;

namespace {

model::Gpt2Config tiny_config(std::int64_t n_embd = 16) {
  model::Gpt2Config c;
  c.vocab_size = 257;
  c.bos_token_id = 256;
  c.eos_token_id = {256};
  c.n_positions = 16;
  c.n_embd = n_embd;
  c.n_layer = 1;
  c.n_head = 2;
  return c;
}

struct Trainee {
  explicit Trainee(std::uint64_t seed, model::Gpt2Config config = tiny_config())
      : model(model::make_causal_lm((torch::manual_seed(seed), config))) {
    engine = make_single_process_engine({.use_cpu = true});
  }
  void attach() {
    std::vector<NamedParameter> parameters;
    for (const auto& item : model->named_parameters()) parameters.push_back({item.key(), item.value(), true});
    engine->attach(parameters, {0.9, 0.99, 1e-8, 0.01});
  }
  void step() {
    const auto ids = torch::randint(0, 257, {2, 16}, torch::kLong);
    model->forward(ids, ids).loss.backward();
    engine->finish_gradients(1.0);
    engine->optimizer_step(1e-2);
  }
  model::CausalLm model;
  std::unique_ptr<TrainingEngine> engine;
};

void require_same_parameters(model::CausalLm& a, model::CausalLm& b) {
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].key());
    CHECK(torch::equal(pa[i].value(), pb[i].value()));
  }
}

// One rank of a larger world as far as checkpoints are concerned: identity from here, the rest
// from a one-process engine.
class RankOf final : public TrainingEngine {
 public:
  RankOf(TrainingEngine& inner, int rank, int world) : inner_(inner), rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  c10::Device device() const override { return inner_.device(); }
  void attach(std::vector<NamedParameter> p, const AdamWSettings& s) override { inner_.attach(std::move(p), s); }
  void begin_micro_step(bool last) override { inner_.begin_micro_step(last); }
  llmrdzv::engine::GradientNorm finish_gradients(double max_norm, double multiplier) override {
    return inner_.finish_gradients(max_norm, multiplier);
  }
  void optimizer_step(double lr) override { inner_.optimizer_step(lr); }
  void skip_step() override { inner_.skip_step(); }
  std::vector<double> all_reduce_sum(std::vector<double> v) override { return v; }
  void barrier() override {}
  TensorMap optimizer_state() const override { return inner_.optimizer_state(); }
  void load_optimizer_state(const TensorMap& state) override { inner_.load_optimizer_state(state); }

 private:
  TrainingEngine& inner_;
  int rank_, world_;
};

}  // namespace

TEST_CASE("a rank dying mid-save leaves the previous complete checkpoint, and older ones go after all saved",
          "[checkpoint]") {
  testing::ScratchDir dir("checkpoint");
  Trainee trainee(1);
  trainee.attach();
  trainee.step();
  RankOf rank0(*trainee.engine, 0, 2), rank1(*trainee.engine, 1, 2);
  const auto save_all = [&](std::int64_t step, std::vector<RankOf*> ranks) {
    for (RankOf* rank : ranks) save_training_checkpoint(dir.path(), trainee.model, *rank, {step, "s", 1.0});
  };
  const auto prune_all = [&](std::int64_t saved) {  // what each rank does after the barrier, --save_total_limit 1
    for (int rank : {0, 1}) prune_training_checkpoints(dir.path(), rank, 1, saved);
  };
  save_all(5, {&rank0, &rank1});
  prune_all(5);
  save_all(10, {&rank0});  // rank 1 dies before its part of checkpoint-10 is complete
  CHECK(fs::exists(dir / "checkpoint-5"));
  CHECK(latest_complete_checkpoint(dir.path(), true) == dir / "checkpoint-5");

  save_all(10, {&rank1});  // ...or it finishes: after the barrier both prune
  prune_all(10);
  CHECK_FALSE(fs::exists(dir / "checkpoint-5"));
  CHECK_FALSE(fs::exists(dir / "rank-1" / "checkpoint-5"));
  CHECK(latest_complete_checkpoint(dir.path(), true) == dir / "checkpoint-10");
}

TEST_CASE("a restored checkpoint continues exactly where the saved run was", "[checkpoint]") {
  testing::ScratchDir dir("checkpoint");
  Trainee original(1);
  original.attach();
  original.step();
  original.step();
  LoopState saved{2, "sampler state text", 9.25};
  saved.logging_dir = "/scratch/run/runs/Nov25_10-00-00_node1";
  const fs::path written = save_training_checkpoint(dir.path(), original.model, *original.engine, saved);
  CHECK(written == dir / "checkpoint-2");
  std::vector<torch::Tensor> at_checkpoint;  // no model built here: that would reseed the RNG
  for (const auto& p : original.model->parameters()) at_checkpoint.push_back(p.detach().clone());
  torch::NoGradGuard no_grad;
  // The original run goes on from the saved RNG state (the global generator: batches here,
  // dropout in a real run)...
  {
    torch::AutoGradMode grad(true);
    original.step();
    original.step();
  }

  // ...and a run restored from the checkpoint, built with other weights and seed, repeats it.
  Trainee resumed(99);
  const VerifiedCheckpoint checkpoint = open_training_checkpoint(resolve_checkpoint("latest", dir.path(), 0));
  restore_model(checkpoint, resumed.model);
  const auto restored = resumed.model->parameters();
  REQUIRE(restored.size() == at_checkpoint.size());
  for (std::size_t i = 0; i < restored.size(); ++i) CHECK(torch::equal(restored[i], at_checkpoint[i]));
  resumed.attach();
  const LoopState state = restore_state(checkpoint, *resumed.engine);
  CHECK(state.global_step == 2);
  CHECK(state.data_state == "sampler state text");
  CHECK(state.train_loss_sum == 9.25);
  CHECK(state.logging_dir == saved.logging_dir);  // a resumed run continues the same TensorBoard curves
  {
    torch::AutoGradMode grad(true);
    resumed.step();
    resumed.step();
  }
  require_same_parameters(original.model, resumed.model);
}

TEST_CASE("checkpoints of another model or with damaged files are refused", "[checkpoint][errors]") {
  testing::ScratchDir dir("checkpoint");
  Trainee original(1);
  original.attach();
  original.step();
  save_training_checkpoint(dir.path(), original.model, *original.engine, {1, "s", 1.0});
  save_training_checkpoint(dir.path(), original.model, *original.engine, {2, "s", 2.0});

  Trainee wider(1, tiny_config(32));
  const VerifiedCheckpoint checkpoint = open_training_checkpoint(dir / "checkpoint-2");
  CHECK_THROWS_WITH(restore_model(checkpoint, wider.model), Catch::Contains("checkpoint-2") &&
                                                                Catch::Contains("another model configuration"));

  const fs::path optimizer_file = dir / "checkpoint-2/optimizer.safetensors";
  fs::resize_file(optimizer_file, fs::file_size(optimizer_file) - 3);
  CHECK_THROWS_WITH(open_training_checkpoint(dir / "checkpoint-2"),
                    Catch::Contains("checkpoint-2") && Catch::Contains("optimizer.safetensors"));
  CHECK(resolve_checkpoint("latest", dir.path(), 0) == dir / "checkpoint-1");

  CHECK_THROWS_WITH(open_training_checkpoint(dir / "elsewhere"), Catch::Contains("not a checkpoint-<step> directory"));
  testing::ScratchDir empty("checkpoint");
  CHECK_THROWS_WITH(resolve_checkpoint("latest", empty.path(), 0),
                    Catch::Contains("no valid checkpoint in " + empty.path().string()));
}

namespace {

// Saves the trainee's model with the byte-level tokenizer into `dir`: options to generate from it on the CPU.
GenerateOptions saved_for_generate(Trainee& trainee, const testing::ScratchDir& dir) {
  io::save_hf_model(trainee.model, dir.path());
  tokenizer::Tokenizer::bytes().save(dir.path());
  GenerateOptions options;
  options.model = dir.path().string();
  options.use_cpu = true;
  return options;
}

}  // namespace

TEST_CASE("generate samples from a saved model reproducibly and names a bad model directory", "[generate]") {
  testing::ScratchDir dir("checkpoint");
  Trainee trainee(3);
  GenerateOptions options = saved_for_generate(trainee, dir);
  options.prompt = "def f(";
  options.max_new_tokens = 6;
  options.temperature = 0.8;
  options.top_k = 5;
  options.seed = 11;
  const std::string first = generate_text(options);
  CHECK(first.starts_with("def f("));
  CHECK(first.size() > options.prompt.size());
  CHECK(generate_text(options) == first);

  options.model = dir.file("missing");
  CHECK_THROWS_WITH(generate_text(options), Catch::Contains(dir.file("missing")));
}

// HF's generate ends at any id of the generation config's eos_token_id, which defaults to
// config.json's (Llama 3.1 lists three). The first greedy token is made an EOS: nothing follows.
TEST_CASE("generate stops at any of the model config's EOS ids", "[generate]") {
  testing::ScratchDir dir("checkpoint");
  Trainee trainee(3);
  GenerateOptions options = saved_for_generate(trainee, dir);
  options.prompt = "def f(";
  options.max_new_tokens = 4;
  options.temperature = 0;
  REQUIRE(generate_text(options).size() > options.prompt.size());

  const std::vector<tokenizer::TokenId> prompt = tokenizer::Tokenizer::bytes().encode_document(options.prompt);
  torch::NoGradGuard no_grad;
  trainee.model->eval();
  const at::Tensor logits =
      trainee.model->forward(torch::tensor(std::vector<std::int64_t>(prompt.begin(), prompt.end())).unsqueeze(0)).logits;
  const std::int64_t first = logits[0][-1].slice(0, 0, 257).argmax().item<std::int64_t>();
  REQUIRE(first != 256);  // the tokenizer's own EOS would stop it anyway
  model::ModelConfig config = model::load_config(dir.path());
  config.as<model::Gpt2Config>().eos_token_id = {256, first};
  model::save_config(config, dir.path());
  CHECK(generate_text(options) == options.prompt);
}

TEST_CASE("a model directory's tokenizer is read exactly or refused, never replaced by bytes", "[generate][tokenizer]") {
  testing::ScratchDir dir("checkpoint");
  Trainee trainee(3);
  GenerateOptions options = saved_for_generate(trainee, dir);
  options.prompt = "ab";
  options.max_new_tokens = 2;
  CHECK_NOTHROW(generate_text(options));
  // As transformers 5 saves a tokenizer: tokenizer.json (+ tokenizer_config.json, special_tokens_map.json),
  // no vocab.json/merges.txt. One that describes another tokenizer is refused, naming the component.
  std::filesystem::remove(dir.path() / "vocab.json");
  std::filesystem::remove(dir.path() / "merges.txt");
  dir.write("tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}");
  CHECK_THROWS_WITH(generate_text(options), Catch::Contains(dir.file("tokenizer.json") + ": model WordPiece: only BPE models"));
  // A SentencePiece model is not read at all: named, and refused.
  std::filesystem::remove(dir.path() / "tokenizer.json");
  dir.write("tokenizer.model", "not read");
  CHECK_THROWS_WITH(generate_text(options), Catch::Contains("carries its tokenizer as tokenizer.model, tokenizer_config.json") &&
                                                Catch::Contains("refusing rather than tokenising differently"));
  // A pretrained model with no tokenizer at all is refused too: bytes are only for fresh models.
  std::filesystem::remove(dir.path() / "tokenizer.model");
  std::filesystem::remove(dir.path() / "tokenizer_config.json");
  std::filesystem::remove(dir.path() / "special_tokens_map.json");
  CHECK_THROWS_WITH(generate_text(options), Catch::Contains("has no tokenizer") && Catch::Contains("--tokenizer_name"));
  // --tokenizer_name pointing at a directory of another format names it.
  testing::ScratchDir other("tokenizer-json");
  other.write("vocab.txt", "[PAD]\n");
  options.tokenizer_name = other.path().string();
  CHECK_THROWS_WITH(generate_text(options), Catch::Contains("--tokenizer_name '" + other.path().string() + "' carries"));
}

TEST_CASE("greedy generate past n_positions picks what re-running the whole window picks", "[generate]") {
  testing::ScratchDir dir("checkpoint");
  Trainee trainee(5);  // n_positions 16: the KV cache fills and the window then slides
  GenerateOptions options = saved_for_generate(trainee, dir);
  options.prompt = "abc";
  options.max_new_tokens = 40;
  options.temperature = 0;
  const std::string generated = generate_text(options);

  // The reference: every token from a full forward over the last n_positions ids, no cache.
  const tokenizer::Tokenizer bytes = tokenizer::Tokenizer::bytes();
  std::vector<tokenizer::TokenId> ids = bytes.encode(options.prompt);
  trainee.model->eval();
  at::NoGradGuard no_grad;
  for (int n = 0; n < options.max_new_tokens; ++n) {
    const std::size_t begin = ids.size() > 16 ? ids.size() - 16 : 0;
    const std::vector<std::int64_t> window(ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.end());
    const at::Tensor logits = trainee.model->forward(at::tensor(window, at::kLong).unsqueeze(0)).logits;
    const auto next = static_cast<tokenizer::TokenId>(logits.index({0, -1}).slice(0, 0, 257).argmax().item<std::int64_t>());
    if (next == bytes.eos_id()) break;
    ids.push_back(next);
  }
  CHECK(ids.size() > 16);
  CHECK(generated == tokenizer::replace_invalid_utf8(bytes.decode(ids)));
}

TEST_CASE("sampling: temperature 0 is greedy and top-k draws only among the k likeliest ids", "[generate]") {
  const torch::Tensor logits = torch::tensor({0.1f, 3.0f, 2.0f, -1.0f, 2.5f});
  at::Generator generator = at::detail::createCPUGenerator(7);
  CHECK(sample_next_token(logits, 0.0, 0, generator) == 1);
  const auto draws = [&](double temperature, std::int64_t top_k) {
    std::set<std::int64_t> seen;
    for (int i = 0; i < 2000; ++i) seen.insert(sample_next_token(logits, temperature, top_k, generator));
    return seen;
  };
  CHECK(draws(5.0, 1) == std::set<std::int64_t>{1});
  CHECK(draws(5.0, 2) == std::set<std::int64_t>{1, 4});  // hot enough that both are drawn
  CHECK(draws(5.0, 3) == std::set<std::int64_t>{1, 2, 4});
  CHECK(draws(5.0, 0) == std::set<std::int64_t>{0, 1, 2, 3, 4});  // no top-k: every id
  at::Generator a = at::detail::createCPUGenerator(11), b = at::detail::createCPUGenerator(11);
  for (int i = 0; i < 50; ++i) CHECK(sample_next_token(logits, 1.5, 3, a) == sample_next_token(logits, 1.5, 3, b));
  // A temperature so small that logits / T overflows: the likeliest id takes all the probability.
  for (int i = 0; i < 20; ++i) CHECK(sample_next_token(logits, 1e-45, 0, generator) == 1);
  // Broken weights: NaN or infinite logits are named, not handed to multinomial.
  for (const float bad : {std::nanf(""), INFINITY}) {
    const torch::Tensor broken = torch::tensor({0.1f, bad, 2.0f});
    CHECK_THROWS_WITH(sample_next_token(broken, 1.0, 0, generator), Catch::Contains("logits are not finite"));
    CHECK_THROWS_WITH(sample_next_token(broken, 0.0, 0, generator), Catch::Contains("logits are not finite"));
  }
}

TEST_CASE("biases and LayerNorm weights are not decayed, weights and embeddings are", "[checkpoint][decay]") {
  model::Gpt2Config config = tiny_config();
  config.n_layer = 2;
  model::CausalLm model = model::make_causal_lm(config);
  std::set<std::string> decayed, undecayed;
  for (const auto& p : trainable_parameters(model)) (p.decay ? decayed : undecayed).insert(p.name);
  CHECK(decayed == std::set<std::string>{
                       "transformer.wte.weight", "transformer.wpe.weight",
                       "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight",
                       "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.weight",
                       "transformer.h.1.attn.c_attn.weight", "transformer.h.1.attn.c_proj.weight",
                       "transformer.h.1.mlp.c_fc.weight", "transformer.h.1.mlp.c_proj.weight"});
  for (const std::string& name : undecayed) {
    INFO(name);
    CHECK((name.ends_with(".bias") || name.find(".ln_") != std::string::npos));
  }
  CHECK(undecayed.size() == 2 * (4 + 4) + 2);  // per block: 4 biases, ln_1/ln_2 weight + bias; ln_f
}

TEST_CASE("Llama's RMSNorm weights are not decayed, as transformers' Trainer groups them", "[checkpoint][decay]") {
  model::LlamaConfig config;
  config.vocab_size = 50;
  config.hidden_size = 16;
  config.num_attention_heads = 2;
  config.intermediate_size = 24;
  config.num_hidden_layers = 2;
  config.max_position_embeddings = 16;
  model::CausalLm model = model::make_causal_lm(config);
  std::set<std::string> undecayed;
  std::size_t decayed = 0;
  for (const auto& p : trainable_parameters(model)) {
    if (p.decay) ++decayed;
    else undecayed.insert(p.name);
  }
  CHECK(undecayed == std::set<std::string>{"model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight",
                                           "model.layers.1.input_layernorm.weight", "model.layers.1.post_attention_layernorm.weight",
                                           "model.norm.weight"});
  CHECK(decayed == 1 + 2 * 7 + 1);  // embed_tokens, q/k/v/o and gate/up/down per layer, lm_head
}
