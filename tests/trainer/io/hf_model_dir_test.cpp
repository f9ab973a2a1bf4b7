// Hugging Face interoperability with real transformers (the venv's python): HF-made
// GPT2LMHeadModel, OPTForCausalLM, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and
// Qwen3ForCausalLM, Phi3ForCausalLM and Gemma2ForCausalLM models of odd shapes load and give the same
// logits, loss and gradients (GPT-2 also in the legacy layout and in shards); a model we save
// loads in AutoModelForCausalLM with the same logits, and saving reads each parameter only when it
// is written (a sharded model is exported unit by unit); bad directories and weight files are
// rejected naming the file and the tensor; a model built without values (ZeRO-3) reads the
// files one parameter at a time.
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randint.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "scratch_dir.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;
namespace fs = std::filesystem;

namespace {

int run_python(const std::string& args) {
  const std::string cmd = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_HF_REFERENCE_SCRIPT + " " + args;
  return std::system(cmd.c_str());
}

at::Tensor named(const io::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors) {
    if (n == name) return t;
  }
  FAIL("no tensor " << name);
  return {};
}

model::Gpt2Config tiny() {
  model::Gpt2Config c;
  c.vocab_size = 50;
  c.n_positions = 16;
  c.n_embd = 24;
  c.n_layer = 2;
  c.n_head = 3;
  c.bos_token_id = 49;
  c.eos_token_id = {49};
  return c;
}

// Every parameter's gradient (after a backward) against HF's "grad/<name>" in the reference.
void expect_hf_gradients(model::CausalLm& m, const io::NamedTensors& ref) {
  std::size_t compared = 0;
  for (const auto& item : m->named_parameters()) {
    INFO(item.key());
    at::Tensor theirs = named(ref, "grad/" + item.key());
    const at::Tensor& ours = item.value().grad();
    REQUIRE(ours.defined());
    if (m->hf_transposed(item.key())) theirs = theirs.t();  // GPT-2's Conv1D [in, out]
    const double scale = theirs.abs().max().item<double>();
    const double diff = (ours - theirs).abs().max().item<double>();
    CHECK(diff <= 1e-5 * std::max(1.0, scale));
    ++compared;
  }
  CHECK(compared == m->parameters().size());
}

// A model loaded back from what `saved` wrote holds the same tensors, bit for bit.
void expect_same_state(const model::CausalLm& saved, const model::CausalLm& loaded) {
  const io::NamedTensors a = io::to_hf_state_dict(saved), b = io::to_hf_state_dict(loaded);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(at::equal(a[i].second, b[i].second));
}

// Saves m (with a stand-in vocab.json) into dir/out and has transformers' AutoModelForCausalLM
// load it and compare its logits and loss with ours on a random batch.
void expect_transformers_loads(model::CausalLm& m, const testing::ScratchDir& dir) {
  std::ofstream(dir / "vocab.json") << R"({"a": 0})";
  io::save_hf_model(m, dir / "out", {dir / "vocab.json"});
  CHECK(fs::exists(dir / "out" / "vocab.json"));
  const at::Tensor ids = at::randint(0, m->config().vocab_size(), {2, 16});
  at::Tensor labels = ids.clone();
  labels.index_put_({1, 4}, -100);
  at::NoGradGuard no_grad;
  const auto out = m->forward(ids, labels);
  io::save_tensors(dir / "ours.safetensors",
                   {{"input_ids", ids}, {"labels", labels}, {"logits", out.logits}, {"loss", out.loss.reshape({1})}});
  CHECK(run_python("check " + (dir / "out").string() + " " + (dir / "ours.safetensors").string()) == 0);
}

}  // namespace

TEST_CASE("an HF GPT2LMHeadModel loads with the same logits and loss", "[hf][python]") {
  testing::ScratchDir dir;
  REQUIRE(run_python("make " + dir.path().string() + " 7") == 0);
  const io::NamedTensors ref = io::read_tensors(io::SafetensorsFile::open(dir / "reference.safetensors"), false);
  const at::Tensor ids = named(ref, "input_ids"), labels = named(ref, "labels");

  REQUIRE(std::filesystem::exists(dir / "hf_sharded" / "model.safetensors.index.json"));
  for (const char* layout : {"hf", "hf_sharded", "hf_legacy"}) {
    for (bool low_mem : {false, true}) {
      INFO(layout << (low_mem ? " low_cpu_mem_usage" : ""));
      model::CausalLm m = io::load_hf_model(dir / layout, {.low_cpu_mem_usage = low_mem});
      m->eval();
      at::NoGradGuard no_grad;
      const auto out = m->forward(ids, labels);
      const double logit_diff = (out.logits - named(ref, "logits")).abs().max().item<double>();
      CHECK(logit_diff < 1e-5);
      CHECK(std::abs(out.loss.item<double>() - named(ref, "loss").item<double>()) < 1e-5);
    }
  }
}

TEST_CASE("gradients equal HF's for every parameter on the same weights and batch", "[hf][python]") {
  // The forward parity above does not cover backward: ours runs its own oneDNN linear backward on
  // the CPU and SDPA's, where HF runs eager attention through autograd.
  testing::ScratchDir dir;
  REQUIRE(run_python("make " + dir.path().string() + " 9") == 0);
  const io::NamedTensors ref = io::read_tensors(io::SafetensorsFile::open(dir / "reference.safetensors"), false);
  model::CausalLm m = io::load_hf_model(dir / "hf");
  m->eval();  // dropout off, as on the HF side; gradients still flow
  m->forward(named(ref, "input_ids"), named(ref, "labels")).loss.backward();
  expect_hf_gradients(m, ref);
}

TEST_CASE("a saved model loads in transformers with the same logits", "[hf][python]") {
  testing::ScratchDir dir;
  torch::manual_seed(11);
  model::CausalLm m = model::make_causal_lm(tiny());
  {
    at::NoGradGuard no_grad;  // non-trivial biases and LayerNorms, as after training
    for (auto& p : m->parameters()) p.add_(at::randn_like(p) * 0.05);
  }
  m->eval();
  expect_transformers_loads(m, dir);

  // And it loads back into our model bit-exactly.
  const model::CausalLm back = io::load_hf_model(dir / "out");
  expect_same_state(m, back);
}

TEST_CASE("a model saved in shards loads in transformers and back into ours", "[hf][python]") {
  testing::ScratchDir dir;
  torch::manual_seed(12);
  model::CausalLm m = model::make_causal_lm(tiny());
  {
    at::NoGradGuard no_grad;
    for (auto& p : m->parameters()) p.add_(at::randn_like(p) * 0.05);
  }
  m->eval();
  const fs::path out = dir / "out";
  io::save_hf_model(m, out);  // first one file, then shards in its place: nothing stale may remain
  CHECK(fs::exists(out / "model.safetensors"));
  io::save_hf_model(m, out, {}, 8000);  // ~8 KB: the 50x24 embedding (4.8 KB) and blocks split up
  CHECK_FALSE(fs::exists(out / "model.safetensors"));
  std::vector<std::string> shards;
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("model-")) {
      shards.push_back(name);
      CHECK(fs::file_size(entry.path()) <= 8000 + 2000);  // tensors up to the limit, plus its header
    }
  }
  std::sort(shards.begin(), shards.end());
  REQUIRE(shards.size() >= 3);
  char first[64];
  std::snprintf(first, sizeof first, "model-00001-of-%05zu.safetensors", shards.size());
  CHECK(shards.front() == first);
  REQUIRE(fs::exists(out / "model.safetensors.index.json"));

  const at::Tensor ids = at::randint(0, 50, {2, 16});
  at::NoGradGuard no_grad;
  const auto result = m->forward(ids, ids);
  io::save_tensors(dir / "ours.safetensors",
                   {{"input_ids", ids}, {"labels", ids}, {"logits", result.logits}, {"loss", result.loss.reshape({1})}});
  CHECK(run_python("check " + out.string() + " " + (dir / "ours.safetensors").string()) == 0);
  const model::CausalLm back = io::load_hf_model(out);
  expect_same_state(m, back);
  // Back to one file: the shards and the index go.
  io::save_hf_model(m, out);
  CHECK(fs::exists(out / "model.safetensors"));
  CHECK_FALSE(fs::exists(out / "model.safetensors.index.json"));
  CHECK_FALSE(fs::exists(out / shards.front()));
}

TEST_CASE("a model built without values (ZeRO-3) is checked against the weight files and reads them one parameter at a time",
          "[hf][deferred]") {
  testing::ScratchDir dir;
  torch::manual_seed(13);
  model::CausalLm m = model::make_causal_lm(tiny());
  const fs::path one = dir / "one", shards = dir / "shards";
  io::save_hf_model(m, one);
  io::save_hf_model(m, shards, {}, 8000);
  for (const fs::path& weights : {one / "model.safetensors", shards / "model.safetensors.index.json"}) {
    INFO(weights);
    CHECK(io::hf_weights_path(weights.parent_path()) == weights);
    model::CausalLm deferred = model::make_causal_lm(m->config(), model::WeightInit::deferred);
    const io::HfWeights files(deferred, weights);
    const auto theirs = m->named_parameters();
    for (const auto& item : deferred->named_parameters()) {  // Conv1D's [in, out] read back as [out, in]
      INFO(item.key());
      const at::Tensor values = at::empty(item.value().sizes(), at::kDouble);
      files.read(item.key(), values);
      CHECK(at::equal(values.to(at::kFloat), theirs[item.key()]));
    }
    CHECK_THROWS_WITH(files.read("transformer.h.9.ln_1.weight", at::empty({24})),
                      Catch::Contains("no weights were checked for parameter \"transformer.h.9.ln_1.weight\""));
  }
  // The checks need the model's shapes only: a tied head that differs is refused before any read.
  io::NamedTensors untied = io::to_hf_state_dict(m);
  untied.emplace_back("lm_head.weight", untied[0].second + 1.0);
  io::save_tensors(dir / "untied.safetensors", untied);
  CHECK_THROWS_WITH(io::HfWeights(model::make_causal_lm(m->config(), model::WeightInit::deferred), dir / "untied.safetensors"),
                    Catch::Contains("lm_head.weight differs from transformer.wte.weight"));
}

TEST_CASE("saving streams the model: each parameter is read only after its hook and not after the next one's, in one file or in shards",
          "[hf]") {
  testing::ScratchDir dir;
  torch::manual_seed(14);
  model::CausalLm m = model::make_causal_lm(tiny());
  const model::CausalLm truth = model::make_causal_lm(tiny());
  {
    at::NoGradGuard no_grad;
    for (auto& p : truth->parameters()) p.add_(at::randn_like(p) * 0.05);
  }
  // As a sharded engine would: the parameters hold nothing useful until their hook brings their
  // values, and the one read before is wiped as the next is brought.
  std::vector<at::Tensor> order;
  const auto wipe = [&] {
    at::NoGradGuard no_grad;
    for (auto& p : m->parameters()) p.zero_();
  };
  const io::ParameterReadHook bring = [&](const at::Tensor& parameter) {
    at::NoGradGuard no_grad;
    if (!order.empty()) order.back().zero_();
    const auto names = m->named_parameters();
    for (const auto& item : names) {
      if (item.value().data_ptr() == parameter.data_ptr()) {
        item.value().copy_(truth->named_parameters()[item.key()]);
        order.push_back(item.value());
        return;
      }
    }
    FAIL("the hook was called with a tensor that is no parameter of the model");
  };
  for (const std::uint64_t max_shard_bytes : {io::kDefaultMaxShardBytes, std::uint64_t{8000}}) {
    INFO("max_shard_bytes " << max_shard_bytes);
    wipe();
    order.clear();
    const fs::path out = dir / ("out-" + std::to_string(max_shard_bytes));
    io::save_hf_model(m, out, {}, max_shard_bytes, bring);
    CHECK(order.size() == m->parameters().size());
    expect_same_state(truth, io::load_hf_model(out));

    // The ranks that do not write make the same calls.
    std::vector<at::Tensor> visited;
    io::visit_saved_parameters(m, [&](const at::Tensor& p) { visited.push_back(p); });
    REQUIRE(visited.size() == order.size());
    for (std::size_t i = 0; i < order.size(); ++i) CHECK(visited[i].data_ptr() == order[i].data_ptr());
  }
}

TEST_CASE("an untied LM head loads with HF's logits and gradients, trains its own weight and saves back", "[hf][python][untied]") {
  testing::ScratchDir dir;
  REQUIRE(run_python("make " + dir.path().string() + " 13 untied") == 0);
  const io::NamedTensors ref = io::read_tensors(io::SafetensorsFile::open(dir / "reference.safetensors"), false);
  model::CausalLm m = io::load_hf_model(dir / "hf");
  REQUIRE_FALSE(m->config().tie_word_embeddings());
  const auto parameter = [](const model::CausalLm& of, const char* name) { return of->named_parameters()[name]; };
  CHECK_FALSE(at::equal(parameter(m, "lm_head.weight"), parameter(m, "transformer.wte.weight")));
  m->eval();
  const auto out = m->forward(named(ref, "input_ids"), named(ref, "labels"));
  CHECK((out.logits - named(ref, "logits")).abs().max().item<double>() < 1e-5);
  CHECK(std::abs(out.loss.item<double>() - named(ref, "loss").item<double>()) < 1e-5);
  out.loss.backward();
  expect_hf_gradients(m, ref);  // lm_head.weight's and wte's apart
  at::Tensor head = parameter(m, "lm_head.weight");
  {
    at::NoGradGuard no_grad;  // a training step's worth of change in the head alone
    head.add_(head.grad(), -0.5);
  }
  const io::NamedTensors saved = io::to_hf_state_dict(m);
  CHECK(at::equal(named(saved, "lm_head.weight"), head));
  expect_transformers_loads(m, dir);  // the changed head is the one transformers computes with
  const model::CausalLm back = io::load_hf_model(dir / "out");
  CHECK(at::equal(parameter(back, "lm_head.weight"), head));
  CHECK(model::parameter_count(m->config()) == static_cast<double>(
      [&] { std::int64_t n = 0; for (const auto& p : m->parameters()) n += p.numel(); return n; }()));
}

TEST_CASE("HF state dicts use Conv1D layouts and no lm_head", "[hf]") {
  model::CausalLm m = model::make_causal_lm(tiny());
  const io::NamedTensors sd = io::to_hf_state_dict(m);
  const at::Tensor c_attn = named(sd, "transformer.h.0.attn.c_attn.weight");
  CHECK(c_attn.sizes().vec() == std::vector<std::int64_t>{24, 72});
  CHECK(at::equal(c_attn, m->named_parameters()["transformer.h.0.attn.c_attn.weight"].t()));
  CHECK(named(sd, "transformer.h.1.mlp.c_fc.weight").sizes().vec() == std::vector<std::int64_t>{24, 96});
  CHECK(named(sd, "transformer.h.1.mlp.c_proj.weight").sizes().vec() == std::vector<std::int64_t>{96, 24});
  CHECK(named(sd, "transformer.wte.weight").sizes().vec() == std::vector<std::int64_t>{50, 24});
  for (const auto& [name, t] : sd) CHECK(name.starts_with("transformer."));
}

TEST_CASE("bad HF directories and weight files are rejected naming the problem", "[hf]") {
  testing::ScratchDir dir;
  model::CausalLm m = model::make_causal_lm(tiny());
  io::save_hf_model(m, dir / "good");
  const fs::path weights = dir / "good" / "model.safetensors";
  io::NamedTensors sd = io::to_hf_state_dict(m);
  auto write_variant = [&](const std::string& name, const io::NamedTensors& tensors) {
    const fs::path d = dir / name;
    fs::create_directories(d);
    model::save_config(m->config(), d);
    io::save_tensors(d / "model.safetensors", tensors);
    return d;
  };

  CHECK_THROWS_WITH(io::load_hf_model(dir / "absent"), Catch::Contains("absent: not a directory"));

  fs::create_directories(dir / "bin_only");
  model::save_config(m->config(), dir / "bin_only");
  std::ofstream(dir / "bin_only" / "pytorch_model.bin") << "pickle";
  CHECK_THROWS_WITH(io::load_hf_model(dir / "bin_only"), Catch::Contains("only model.safetensors weights are supported, found pytorch_model.bin"));

  fs::create_directories(dir / "no_weights");
  model::save_config(m->config(), dir / "no_weights");
  CHECK_THROWS_WITH(io::load_hf_model(dir / "no_weights"), Catch::Contains("no model.safetensors or model.safetensors.index.json"));

  fs::create_directories(dir / "no_config");
  fs::copy_file(weights, dir / "no_config" / "model.safetensors");
  CHECK_THROWS_WITH(io::load_hf_model(dir / "no_config"), Catch::Contains("config.json") && Catch::Contains("No such file"));

  io::NamedTensors missing = sd;
  missing.pop_back();
  CHECK_THROWS_WITH(io::load_hf_model(write_variant("missing", missing)), Catch::Contains("missing tensor \"transformer."));

  io::NamedTensors extra = sd;
  extra.emplace_back("transformer.h.9.attn.c_attn.weight", at::zeros({24, 72}));
  CHECK_THROWS_WITH(io::load_hf_model(write_variant("extra", extra)),
                    Catch::Contains("unexpected tensor \"transformer.h.9.attn.c_attn.weight\" (not a parameter of this gpt2 model)"));

  io::NamedTensors twice = sd;
  twice.emplace_back("wpe.weight", named(sd, "transformer.wpe.weight"));
  CHECK_THROWS_WITH(io::load_hf_model(write_variant("twice", twice)), Catch::Contains("appears twice"));

  io::NamedTensors linear_layout = sd;  // [out, in] instead of Conv1D's [in, out]
  for (auto& [name, t] : linear_layout) {
    if (name == "transformer.h.0.attn.c_attn.weight") t = t.t().contiguous();
  }
  CHECK_THROWS_WITH(io::load_hf_model(write_variant("linear_layout", linear_layout)),
                    Catch::Contains("tensor \"transformer.h.0.attn.c_attn.weight\" has shape [72, 24], config.json implies [24, 72] (Conv1D [in, out])"));

  io::NamedTensors ints = sd;
  ints[0].second = ints[0].second.to(at::kInt);
  CHECK_THROWS_WITH(io::load_hf_model(write_variant("ints", ints)), Catch::Contains("has dtype I32, not a float type"));

  io::NamedTensors untied = sd;
  untied.emplace_back("lm_head.weight", named(sd, "transformer.wte.weight") + 1.0);
  CHECK_THROWS_WITH(io::load_hf_model(write_variant("untied", untied)),
                    Catch::Contains("lm_head.weight differs from transformer.wte.weight"));

  io::NamedTensors tied = sd;
  tied.emplace_back("lm_head.weight", named(sd, "transformer.wte.weight").clone());
  CHECK_NOTHROW(io::load_hf_model(write_variant("tied", tied)));

  io::NamedTensors halfs = sd;  // F16 weights load, converted to the model's fp32
  for (auto& [name, t] : halfs) t = t.to(at::kHalf);
  const model::CausalLm from_half = io::load_hf_model(write_variant("half", halfs));
  CHECK(at::allclose(io::to_hf_state_dict(from_half)[0].second, sd[0].second, 1e-2, 1e-3));

  const fs::path sharded = write_variant("sharded", sd);
  fs::rename(sharded / "model.safetensors", sharded / "shard-1.safetensors");
  std::ofstream(sharded / "model.safetensors.index.json")
      << R"({"metadata": {}, "weight_map": {"transformer.wte.weight": "shard-1.safetensors"}})";
  CHECK_NOTHROW(io::load_hf_model(sharded));
  std::ofstream(sharded / "model.safetensors.index.json", std::ios::trunc)
      << R"({"weight_map": {"transformer.h.7.ln_1.weight": "shard-1.safetensors"}})";
  CHECK_THROWS_WITH(io::load_hf_model(sharded), Catch::Contains("shard-1.safetensors: tensor \"transformer.h.7.ln_1.weight\" listed in "
                                                                "model.safetensors.index.json is not in this shard"));
  std::ofstream(sharded / "model.safetensors.index.json", std::ios::trunc) << R"({"weight_map": {"a": "../x.safetensors"}})";
  CHECK_THROWS_WITH(io::load_hf_model(sharded), Catch::Contains("weight_map entry \"a\" is not a plain file name"));
  std::ofstream(sharded / "model.safetensors.index.json", std::ios::trunc) << R"({"weight_map": {"a": "missing.safetensors"}})";
  CHECK_THROWS_WITH(io::load_hf_model(sharded), Catch::Contains("missing.safetensors") && Catch::Contains("No such file or directory"));
  std::ofstream(sharded / "model.safetensors.index.json", std::ios::trunc) << "{";
  CHECK_THROWS_WITH(io::load_hf_model(sharded), Catch::Contains("model.safetensors.index.json: not valid JSON"));

  fs::create_directories(dir / "corrupt");
  model::save_config(m->config(), dir / "corrupt");
  std::ofstream(dir / "corrupt" / "model.safetensors") << "garbage that is not a safetensors file";
  CHECK_THROWS_WITH(io::load_hf_model(dir / "corrupt"), Catch::Contains("corrupt/model.safetensors: header length"));
}

// OPT, Llama, Mistral (a sliding window shorter than the batch's positions), Qwen2 (windowed and
// full layers, q/k/v biases), Qwen3 (per-head q/k norms, head_dim apart), Phi-3 (fused
// projections), Gemma 2 (sandwich norms, soft-capping) and Gemma 3 (per-head q/k norms, a local
// rope base) on odd shapes made by
// transformers itself: the same logits and loss, every parameter's gradient within 1e-5 (OPT's pad
// row included: no gradient), then one SGD step on our side is saved and transformers computes our
// logits from it.
TEST_CASE("HF-made OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 models give HF's logits and gradients, and save back",
          "[hf][python][families]") {
  struct Family {
    const char* variant;
    const char* model_type;
    std::size_t tensors;  // in the saved state dict
  };
  for (const Family family : {Family{"opt", "opt", 2 + 2 * 16 + 2}, Family{"opt-350m", "opt", 2 + 2 + 2 * 16},
                              Family{"llama", "llama", 1 + 2 * 9 + 1 + 1}, Family{"llama-mqa", "llama", 1 + 2 * 16 + 1},
                              Family{"llama3", "llama", 1 + 2 * 9 + 1 + 1}, Family{"mistral", "mistral", 1 + 2 * 9 + 1 + 1},
                              Family{"qwen2", "qwen2", 1 + 3 * (9 + 3) + 1}, Family{"qwen3", "qwen3", 1 + 2 * (9 + 4 + 2) + 1 + 1},
                              Family{"phi3", "phi3", 1 + 2 * 6 + 1 + 1}, Family{"gemma2", "gemma2", 1 + 3 * 11 + 1},
                              Family{"gemma3", "gemma3_text", 1 + 4 * 13 + 1}}) {
    DYNAMIC_SECTION(family.variant) {
      testing::ScratchDir dir;
      REQUIRE(run_python(std::string("make ") + dir.path().string() + " 21 " + family.variant) == 0);
      const io::NamedTensors ref = io::read_tensors(io::SafetensorsFile::open(dir / "reference.safetensors"), false);
      model::CausalLm m = io::load_hf_model(dir / "hf");
      CHECK(m->config().model_type() == family.model_type);
      if (std::string_view(family.variant) == "llama3") CHECK(m->config().eos_token_ids() == model::TokenIds{100, 101, 102});
      m->eval();
      const auto out = m->forward(named(ref, "input_ids"), named(ref, "labels"));
      CHECK((out.logits - named(ref, "logits")).abs().max().item<double>() < 1e-5);
      CHECK(std::abs(out.loss.item<double>() - named(ref, "loss").item<double>()) < 1e-5);
      out.loss.backward();
      expect_hf_gradients(m, ref);
      {
        at::NoGradGuard no_grad;
        for (auto& p : m->parameters()) p.add_(p.grad(), -0.5);
      }
      CHECK(io::to_hf_state_dict(m).size() == family.tensors);
      expect_transformers_loads(m, dir);
      const model::CausalLm back = io::load_hf_model(dir / "out");
      expect_same_state(m, back);
    }
  }
}

TEST_CASE("OPT's pad row gets no gradient and Llama's old rotary buffers are ignored", "[hf][families]") {
  model::OptConfig opt;
  opt.vocab_size = 20;
  opt.hidden_size = 8;
  opt.num_attention_heads = 2;
  opt.ffn_dim = 12;
  opt.num_hidden_layers = 1;
  opt.max_position_embeddings = 8;
  opt.bos_token_id = 2;
  opt.eos_token_id = {2};
  opt.tie_word_embeddings = false;  // a tied head's own gradient would reach every row
  model::CausalLm m = model::make_causal_lm(opt);
  const at::Tensor ids = at::arange(5, at::kLong).view({1, 5}) % 3 + 1;  // 1 2 3 1 2
  m->forward(ids, ids).loss.backward();
  const at::Tensor grad = m->named_parameters()["model.decoder.embed_tokens.weight"].grad();
  CHECK(grad[1].abs().sum().item<double>() == 0.0);
  CHECK(grad[3].abs().sum().item<double>() > 0.0);

  model::LlamaConfig llama;
  llama.vocab_size = 20;
  llama.hidden_size = 8;
  llama.num_attention_heads = 2;
  llama.intermediate_size = 12;
  llama.num_hidden_layers = 1;
  llama.max_position_embeddings = 8;
  model::CausalLm l = model::make_causal_lm(llama);
  testing::ScratchDir dir;
  io::NamedTensors sd = io::to_hf_state_dict(l);
  sd.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", at::ones({2}));
  fs::create_directories(dir / "old");
  model::save_config(l->config(), dir / "old");
  io::save_tensors(dir / "old" / "model.safetensors", sd);
  const model::CausalLm back = io::load_hf_model(dir / "old");
  CHECK(at::equal(io::to_hf_state_dict(back)[0].second, sd[0].second));
}
