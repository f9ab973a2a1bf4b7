// GPT-2 config.json reading/writing and run_clm.py's --config_overrides, including every error.
#include <catch2/catch.hpp>

#include <fstream>

#include "llmrdzv/model/model_config.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv;
using model::ConfigError;
using model::Gpt2Config;

namespace {

// Hugging Face's published gpt2 config.json, with the keys we ignore.
constexpr const char* kHfGpt2Config = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
  "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
  "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
  "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
  "summary_use_proj": true, "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
})";

bool same(const Gpt2Config& a, const Gpt2Config& b) {
  return model::config_to_json(a) == model::config_to_json(b);
}

}  // namespace

TEST_CASE("config reads HF's gpt2 config.json", "[config]") {
  const Gpt2Config c = model::config_from_json(kHfGpt2Config, "gpt2/config.json").as<Gpt2Config>();
  CHECK(c.vocab_size == 50257);
  CHECK(c.n_positions == 1024);
  CHECK(c.n_embd == 768);
  CHECK(c.n_layer == 12);
  CHECK(c.n_head == 12);
  CHECK_FALSE(c.n_inner);
  CHECK(c.inner_dim() == 3072);
  CHECK(c.head_dim() == 64);
  CHECK(c.layer_norm_epsilon == 1e-5);
  CHECK(c.activation_function == "gelu_new");
  CHECK(same(c, model::preset("gpt2").as<Gpt2Config>()));
}

TEST_CASE("config round trips through config.json on disk", "[config]") {
  testing::ScratchDir dir;
  Gpt2Config c = model::preset("gpt2-medium").as<Gpt2Config>();
  c.vocab_size = 1000;
  c.bos_token_id = 999;
  c.eos_token_id = {999};
  c.n_inner = 2048;
  c.attn_pdrop = 0.0;
  c.layer_norm_epsilon = 1e-6;
  c.activation_function = "gelu";
  c.scale_attn_by_inverse_layer_idx = true;
  model::save_config(c, dir.path());
  const Gpt2Config back = model::load_config(dir.path()).as<Gpt2Config>();  // a directory or the file itself
  CHECK(same(c, back));
  CHECK(same(c, model::load_config(dir / "config.json").as<Gpt2Config>()));
  CHECK(back.n_inner == 2048);
  CHECK(back.layer_norm_epsilon == 1e-6);
  const std::string text = model::config_to_json(c);
  CHECK_THAT(text, Catch::Contains("\"model_type\": \"gpt2\"") && Catch::Contains("\"GPT2LMHeadModel\""));
}

TEST_CASE("config.json errors name the file and the key", "[config]") {
  struct Case {
    std::string json;
    std::string message;
  };
  const Case cases[] = {
      {"{\"n_embd\": 64,", "cfg.json: not valid JSON: at byte 14"},
      {"[]", "cfg.json: expected a JSON object, got array"},
      {R"({"n_layer": 2, "n_embd": 64})", "no model_type (gpt2, opt, llama, mistral, qwen2, qwen3, phi3, gemma2 and gemma3_text)"},
      {R"({"model_type": 2})", "model_type must be a string"},
      {R"({"model_type": "bert"})", "model_type \"bert\" is not supported (gpt2, opt, llama, mistral, qwen2, qwen3, phi3, gemma2 and gemma3_text are)"},
      {R"({"model_type": "gpt2", "n_embd": "768"})", "cfg.json: n_embd must be an integer, got string"},
      {R"({"model_type": "gpt2", "n_embd": 76.8})", "n_embd must be an integer, got number"},
      {R"({"model_type": "gpt2", "resid_pdrop": "high"})", "resid_pdrop must be a number, got string"},
      {R"({"model_type": "gpt2", "scale_attn_weights": 1})", "scale_attn_weights must be a boolean, got number"},
      {R"({"model_type": "gpt2", "n_inner": "big"})", "n_inner must be an integer or null"},
      {R"({"model_type": "gpt2", "n_embd": 100, "n_head": 12})", "n_embd (100) must be divisible by n_head (12)"},
      {R"({"model_type": "gpt2", "n_layer": 0})", "n_layer must be >= 1, got 0"},
      {R"({"model_type": "gpt2", "attn_pdrop": 1.0})", "attn_pdrop must be in [0, 1)"},
      {R"({"model_type": "gpt2", "layer_norm_epsilon": 0})", "layer_norm_epsilon must be > 0"},
      {R"({"model_type": "gpt2", "activation_function": "swish2"})", "activation_function \"swish2\" is not one of"},
      {R"({"model_type": "gpt2", "vocab_size": 100})", "bos_token_id 50256 is outside the vocabulary (vocab_size 100)"},
      {R"({"model_type": "gpt2", "add_cross_attention": true})", "add_cross_attention=true is not supported"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    CHECK_THROWS_AS(model::config_from_json(c.json, "cfg.json"), ConfigError);
    CHECK_THROWS_WITH(model::config_from_json(c.json, "cfg.json"), Catch::StartsWith("cfg.json: ") && Catch::Contains(c.message));
  }
  testing::ScratchDir dir;
  CHECK_THROWS_WITH(model::load_config(dir.path()), Catch::Contains((dir / "config.json").string()) && Catch::Contains("No such file"));
}

TEST_CASE("config overrides apply run_clm.py's key=value list", "[config]") {
  Gpt2Config c = model::preset("gpt2").as<Gpt2Config>();
  model::apply_overrides(c, "n_embd=1024,n_head=16,n_layer=48");
  CHECK(c.n_embd == 1024);
  CHECK(c.n_head == 16);
  CHECK(c.n_layer == 48);
  model::apply_overrides(c, "resid_pdrop=0.0,activation_function=relu,scale_attn_weights=false,n_inner=100");
  CHECK(c.resid_pdrop == 0.0);
  CHECK(c.activation_function == "relu");
  CHECK_FALSE(c.scale_attn_weights);
  CHECK(c.n_inner == 100);
}

TEST_CASE("config override errors name the item and leave the config unchanged", "[config]") {
  const Gpt2Config original = model::preset("gpt2").as<Gpt2Config>();
  struct Case {
    const char* overrides;
    const char* message;
  };
  const Case cases[] = {
      {"n_embd", "--config_overrides: \"n_embd\" is not key=value"},
      {"n_embd=1024,,n_head=16", "--config_overrides: \"\" is not key=value"},
      {"=5", "\"=5\" is not key=value"},
      {"hidden_size=1024", "--config_overrides: unknown key \"hidden_size\""},
      {"n_embd=abc", "--config_overrides: n_embd=abc: not an integer"},
      {"n_embd=12.5", "n_embd=12.5: not an integer"},
      {"resid_pdrop=lots", "resid_pdrop=lots: not a number"},
      {"scale_attn_weights=maybe", "not a boolean (true/false)"},
      {"n_embd=1000", "--config_overrides: n_embd (1000) must be divisible by n_head (12)"},
      {"n_layer=-3", "--config_overrides: n_layer must be >= 1, got -3"},
      {"activation_function=tanh", "activation_function \"tanh\" is not one of"},
  };
  for (const Case& c : cases) {
    INFO(c.overrides);
    Gpt2Config cfg = original;
    CHECK_THROWS_WITH(model::apply_overrides(cfg, c.overrides), Catch::Contains(c.message));
    CHECK(same(cfg, original));
  }
}

TEST_CASE("config presets have HF's shapes", "[config]") {
  CHECK(model::preset("gpt2-medium").as<Gpt2Config>().n_layer == 24);
  CHECK(model::preset("gpt2-large").as<Gpt2Config>().n_embd == 1280);
  CHECK(model::preset("gpt2-xl").as<Gpt2Config>().n_head == 25);
  CHECK_THROWS_WITH(model::preset("gpt3"), Catch::Contains("unknown model preset \"gpt3\""));
}

TEST_CASE("OPT, Llama, Mistral, Qwen, Phi-3 and Gemma presets count the parameters transformers builds", "[config][families]") {
  // sum(p.numel() for p in AutoModelForCausalLM.from_config(...).parameters()), transformers 5.23.
  const std::pair<const char*, double> counts[] = {{"opt-125m", 125239296.0},     {"opt-350m", 331196416.0},
                                                   {"smollm-135m", 134515008.0},   {"tinyllama-1.1b", 1100048384.0},
                                                   {"llama-2-7b", 6738415616.0},   {"mistral-7b", 7241732096.0},
                                                   {"qwen2.5-0.5b", 494032768.0},  {"qwen2.5-7b", 7615616512.0},
                                                   {"qwen3-0.6b", 596049920.0},    {"qwen3-8b", 8190735360.0},
                                                   {"phi-3-mini", 3821079552.0},   {"gemma-2-2b", 2614341888.0},
                                                   {"gemma-3-1b", 999885952.0}};
  for (const auto& [name, expected] : counts) {
    INFO(name);
    const model::ModelConfig c = model::preset(name);
    CHECK(model::parameter_count(c) == expected);
    model::validate(c, name);
  }
  CHECK(model::preset("opt-350m").as<model::OptConfig>().embed_dim() == 512);
  CHECK(model::preset("smollm-135m").as<model::LlamaConfig>().kv_heads() == 3);
  CHECK(model::preset("llama-2-7b").model_type() == "llama");
  CHECK(model::preset("mistral-7b").as<model::MistralConfig>().sliding_window == 4096);
  CHECK(model::preset("qwen2.5-0.5b").model_type() == "qwen2");
  CHECK(model::preset("qwen3-8b").as<model::Qwen3Config>().head_size() == 128);
}

TEST_CASE("Mistral and Qwen configs round trip with their windows and layer types", "[config][families]") {
  model::ModelConfig qwen2 = model::preset("qwen2.5-0.5b");
  model::apply_overrides(qwen2, "num_hidden_layers=4,use_sliding_window=true,max_window_layers=2,sliding_window=64");
  const std::string text = model::config_to_json(qwen2);
  CHECK_THAT(text, Catch::Contains("\"Qwen2ForCausalLM\"") &&
                       Catch::Contains(R"("layer_types": [
    "full_attention",
    "full_attention",
    "sliding_attention",
    "sliding_attention"
  ])"));
  const model::ModelConfig back = model::config_from_json(text, "qwen2.json");
  CHECK(model::config_to_json(back) == text);
  CHECK(back.as<model::Qwen2Config>().window_of(1) == std::nullopt);
  CHECK(back.as<model::Qwen2Config>().window_of(3) == 64);

  model::ModelConfig mistral = model::preset("mistral-7b");
  model::apply_overrides(mistral, "sliding_window=null");
  CHECK(model::config_from_json(model::config_to_json(mistral), "m.json").as<model::MistralConfig>().sliding_window == std::nullopt);
  CHECK_THROWS_WITH(model::apply_overrides(mistral, "attention_bias=true"),
                    Catch::Contains("unknown key \"attention_bias\" for model_type mistral"));
  const model::ModelConfig qwen3 = model::preset("qwen3-0.6b");
  CHECK(model::config_from_json(model::config_to_json(qwen3), "q.json").as<model::Qwen3Config>().head_size() == 128);
}

TEST_CASE("Gemma 3 reads the hub's older config form and writes transformers 5's", "[config][families]") {
  // google/gemma-3-1b-pt's keys, shrunk, with a linear rope scaling as the larger Gemma 3 models have.
  const model::ModelConfig hub = model::config_from_json(
      R"({"model_type": "gemma3_text", "num_hidden_layers": 7, "hidden_size": 64, "head_dim": 16,
          "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 96, "vocab_size": 300,
          "sliding_window": 512, "sliding_window_pattern": 6, "rope_theta": 1000000, "rope_local_base_freq": 10000,
          "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "attn_logit_softcapping": null,
          "final_logit_softcapping": null, "cache_implementation": "hybrid"})",
      "gemma3.json");
  const auto& c = hub.as<model::Gemma3TextConfig>();
  CHECK(c.rope_type == "linear");
  CHECK(c.rope_factor == 8.0);
  CHECK(c.local_rope_theta == 10000.0);
  CHECK(c.local_rope_type == "default");
  CHECK(c.resolved_layer_types() == std::vector<std::string>{"sliding_attention", "sliding_attention", "sliding_attention",
                                                              "sliding_attention", "sliding_attention", "full_attention",
                                                              "sliding_attention"});
  const std::string text = model::config_to_json(hub);
  CHECK_THAT(text, Catch::Contains("\"Gemma3ForCausalLM\"") && Catch::Contains(R"("full_attention": {
      "rope_theta": 1e+06,
      "rope_type": "linear",
      "factor": 8.0
    })") && Catch::Contains(R"("sliding_attention": {
      "rope_theta": 10000.0,
      "rope_type": "default"
    })"));
  CHECK_THAT(text, !Catch::Contains("rope_local_base_freq") && !Catch::Contains("sliding_window_pattern"));
  const model::ModelConfig back = model::config_from_json(text, "gemma3-back.json");
  CHECK(model::config_to_json(back) == text);
  CHECK(back.as<model::Gemma3TextConfig>().resolved_layer_types() == c.resolved_layer_types());
  model::ModelConfig preset = model::preset("gemma-3-1b");
  model::apply_overrides(preset, "rope_local_base_freq=500,sliding_window_pattern=2,num_hidden_layers=2");
  CHECK(preset.as<model::Gemma3TextConfig>().local_rope_theta == 500.0);
  CHECK(preset.as<model::Gemma3TextConfig>().resolved_layer_types() ==
        std::vector<std::string>{"sliding_attention", "full_attention"});
}

TEST_CASE("a fresh config takes the tokenizer's vocabulary, EOS, and BOS where it has one", "[config][families]") {
  model::ModelConfig llama = model::preset("smollm-135m");
  llama.fit_to_tokenizer(32000, 2, 1);  // Llama 2's </s> and <s>
  CHECK(llama.vocab_size() == 32000);
  CHECK(llama.as<model::LlamaConfig>().eos_token_id == model::TokenIds{2});
  CHECK(llama.as<model::LlamaConfig>().bos_token_id == 1);
  model::ModelConfig gpt2 = model::preset("gpt2");
  gpt2.fit_to_tokenizer(257, 256, std::nullopt);  // no BOS of its own: the EOS stands in, as in GPT-2
  CHECK(gpt2.as<Gpt2Config>().bos_token_id == 256);
  CHECK(gpt2.as<Gpt2Config>().eos_token_id == model::TokenIds{256});
  model::ModelConfig opt = model::preset("opt-125m");  // pad_token_id 1 outside 1 id: cleared
  opt.fit_to_tokenizer(1, 0, 0);
  CHECK_FALSE(opt.as<model::OptConfig>().pad_token_id.has_value());
}

TEST_CASE("OPT and Llama configs round trip and read transformers' older forms", "[config][families]") {
  testing::ScratchDir dir;
  model::ModelConfig opt = model::preset("opt-350m");
  model::apply_overrides(opt, "num_hidden_layers=3,dropout=0.0,ffn_dim=100");
  model::save_config(opt, dir.path());
  const model::ModelConfig back = model::load_config(dir.path());
  CHECK(model::config_to_json(back) == model::config_to_json(opt));
  CHECK(back.as<model::OptConfig>().num_hidden_layers == 3);
  CHECK_FALSE(back.as<model::OptConfig>().do_layer_norm_before);
  CHECK_THAT(model::config_to_json(opt), Catch::Contains("\"OPTForCausalLM\"") && Catch::Contains("\"word_embed_proj_dim\": 512"));

  model::ModelConfig llama = model::preset("tinyllama-1.1b");
  model::apply_overrides(llama, "rope_theta=500000,num_key_value_heads=8");
  const std::string text = model::config_to_json(llama);
  CHECK_THAT(text, Catch::Contains("\"rope_parameters\"") && Catch::Contains("\"rope_type\": \"default\""));
  CHECK(model::config_to_json(model::config_from_json(text, "llama.json")) == text);
  CHECK(model::config_from_json(text, "llama.json").as<model::LlamaConfig>().rope_theta == 500000.0);

  // transformers 4.x: top-level rope_theta and rope_scaling {"type": "linear", "factor"}.
  const model::LlamaConfig old =
      model::config_from_json(R"({"model_type": "llama", "rope_theta": 250000.0, "rope_scaling": {"type": "linear", "factor": 4.0},
                                  "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100})",
                              "old.json")
          .as<model::LlamaConfig>();
  CHECK(old.rope_theta == 250000.0);
  CHECK(old.rope_type == "linear");
  CHECK(old.rope_factor == 4.0);
  CHECK(old.head_size() == 16);
  CHECK(old.kv_heads() == 4);
}

// Llama 3.1's config.json as transformers 4.x wrote it: llama3 rope scaling under rope_scaling and
// three EOS ids; transformers 5 moves the rope keys into rope_parameters, as we write them.
TEST_CASE("Llama 3.1's llama3 rope and its list of EOS ids are read and written back", "[config][families]") {
  const model::ModelConfig read = model::config_from_json(R"({"model_type": "llama", "vocab_size": 128256,
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 131072,
      "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "rope_theta": 500000.0,
      "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"}})",
                                                          "llama31.json");
  const auto& c = read.as<model::LlamaConfig>();
  CHECK(c.rope_type == "llama3");
  CHECK(c.rope_factor == 8.0);
  CHECK(c.rope_low_freq_factor == 1.0);
  CHECK(c.rope_high_freq_factor == 4.0);
  CHECK(c.rope_original_max_position_embeddings == 8192);
  CHECK(c.rope_theta == 500000.0);
  CHECK(read.eos_token_ids() == model::TokenIds{128001, 128008, 128009});
  const std::string text = model::config_to_json(read);
  CHECK_THAT(text, Catch::Contains(R"("original_max_position_embeddings": 8192)") && Catch::Contains(R"("rope_type": "llama3")"));
  const model::ModelConfig again = model::config_from_json(text, "again.json");
  CHECK(again.eos_token_ids() == model::TokenIds{128001, 128008, 128009});
  CHECK(model::config_to_json(again) == text);

  model::ModelConfig one = read;  // an override sets one id, written as an integer
  model::apply_overrides(one, "eos_token_id=128009");
  CHECK(one.eos_token_ids() == model::TokenIds{128009});
  CHECK_THAT(model::config_to_json(one), Catch::Contains(R"("eos_token_id": 128009,)"));
  CHECK_THROWS_WITH(model::apply_overrides(one, "eos_token_id=[1]"), Catch::Contains("eos_token_id=[1]: not an integer"));
}

TEST_CASE("OPT and Llama config errors name the key", "[config][families]") {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model_type": "llama", "num_attention_heads": 6, "num_key_value_heads": 4, "hidden_size": 48})",
       "num_attention_heads (6) must be a multiple of num_key_value_heads (4)"},
      {R"({"model_type": "llama", "rope_parameters": {"rope_type": "yarn", "factor": 4.0}})",
       "rope type \"yarn\" is not supported (default, linear and llama3 are)"},
      {R"({"model_type": "llama", "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})",
       "rope_scaling has no \"low_freq_factor\", which rope type llama3 needs"},
      {R"({"model_type": "llama", "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1,
          "high_freq_factor": 4}})",
       "rope_parameters has no \"original_max_position_embeddings\", which rope type llama3 needs"},
      {R"({"model_type": "llama", "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4,
          "high_freq_factor": 1, "original_max_position_embeddings": 8192}})",
       "the llama3 rope needs 0 < low_freq_factor < high_freq_factor"},
      {R"({"model_type": "llama", "rope_parameters": {"rope_type": "llama3", "factor": 0.5, "low_freq_factor": 1,
          "high_freq_factor": 4, "original_max_position_embeddings": 8192}})",
       "the llama3 rope factor must be >= 1"},
      {R"({"model_type": "llama", "rope_parameters": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
          "high_freq_factor": 4, "original_max_position_embeddings": 8192.5}})",
       "rope_parameters.original_max_position_embeddings must be an integer"},
      {R"({"model_type": "llama", "eos_token_id": [128001, 5]})", "eos_token_id 128001 is outside the vocabulary"},
      {R"({"model_type": "llama", "eos_token_id": []})", "eos_token_id must be an integer or a non-empty list of integers"},
      {R"({"model_type": "gpt2", "eos_token_id": [1, "x"]})", "eos_token_id must be an integer or a non-empty list of integers"},
      {R"({"model_type": "llama", "hidden_size": 60, "num_attention_heads": 4})", "head_dim (15) must be even"},
      {R"({"model_type": "llama", "pretraining_tp": 2})", "pretraining_tp must be 1"},
      {R"({"model_type": "llama", "rms_norm_eps": 0})", "rms_norm_eps must be > 0"},
      {R"({"model_type": "llama", "hidden_act": "gelu_fast"})", "hidden_act \"gelu_fast\" is not one of"},
      {R"({"model_type": "opt", "layerdrop": 0.1})", "layerdrop must be 0"},
      {R"({"model_type": "mistral", "sliding_window": 0})", "sliding_window must be >= 1"},
      {R"({"model_type": "qwen2", "num_hidden_layers": 2, "layer_types": ["full_attention", "chunked_attention"]})",
       "layer type \"chunked_attention\" is not supported (full_attention and sliding_attention are)"},
      {R"({"model_type": "qwen3", "num_hidden_layers": 3, "layer_types": ["full_attention"]})",
       "layer_types has 1 entries for 3 layers"},
      {R"({"model_type": "qwen2", "rope_scaling": {"type": "yarn", "factor": 4.0}})", "rope type \"yarn\" is not supported"},
      {R"({"model_type": "gemma3_text", "rope_parameters": {"rope_type": "default", "rope_theta": 10000}})",
       "rope_parameters must be an object of full_attention and sliding_attention settings"},
      {R"({"model_type": "gemma3_text", "rope_parameters": {"sliding_attention": {"rope_type": "yarn", "factor": 2}}})",
       "rope type \"yarn\" of the sliding layers is not supported (default and linear are)"},
      {R"({"model_type": "gemma3_text", "rope_parameters": {"full_attention": {"rope_type": "dynamic", "factor": 2}}})",
       "rope type \"dynamic\" is not supported"},
      {R"({"model_type": "gemma3_text", "sliding_window_pattern": 0})", "sliding_window_pattern must be >= 1"},
      {R"({"model_type": "gemma3_text", "use_bidirectional_attention": true})", "use_bidirectional_attention is not supported"},
      {R"({"model_type": "gemma2", "use_bidirectional_attention": true})", "use_bidirectional_attention is not supported"},
      {R"({"model_type": "gemma2", "final_logit_softcapping": "high"})", "final_logit_softcapping must be a number or null"},
      {R"({"model_type": "phi3", "rope_parameters": {"rope_type": "longrope", "short_factor": [1], "long_factor": [1]}})",
       "rope type \"longrope\" is not supported"},
      {R"({"model_type": "phi3", "rope_scaling": {"type": "su", "short_factor": [1], "long_factor": [1]}})",
       "rope type \"su\" is not supported"},
      {R"({"model_type": "phi3", "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}})",
       "partial_rotary_factor must be 1"},
      // Sizes whose products overflowed int64 (the OPT position count + 2, Llama's heads x head_dim).
      {R"({"model_type": "opt", "max_position_embeddings": 9223372036854775806})",
       "max_position_embeddings must be at most 2147483647, got 9223372036854775806"},
      {R"({"model_type": "llama", "num_attention_heads": 4294967296, "num_key_value_heads": 4294967296, "head_dim": 4294967296})",
       "num_attention_heads must be at most 2147483647"},
      {R"({"model_type": "opt", "hidden_size": 100, "num_attention_heads": 12})",
       "hidden_size (100) must be divisible by num_attention_heads (12)"},
      {R"({"model_type": "opt", "pad_token_id": 60000})", "pad_token_id 60000 is outside the vocabulary"},
      {R"({"model_type": "opt", "word_embed_proj_dim": "wide"})", "word_embed_proj_dim must be an integer or null"},
  };
  for (const auto& [json, message] : cases) {
    INFO(json);
    CHECK_THROWS_WITH(model::config_from_json(json, "cfg.json"), Catch::StartsWith("cfg.json: ") && Catch::Contains(message));
  }
  model::ModelConfig opt = model::preset("opt-125m");
  CHECK_THROWS_WITH(model::apply_overrides(opt, "n_embd=64"), Catch::Contains("unknown key \"n_embd\" for model_type opt"));
  CHECK_THROWS_WITH(model::apply_overrides(opt, "num_attention_heads=7"), Catch::Contains("must be divisible"));
  CHECK(opt.as<model::OptConfig>().num_attention_heads == 12);
}
