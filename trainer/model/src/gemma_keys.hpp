// What Gemma 2 and Gemma 3 share in config.json: Llama's keys with the activation named
// hidden_activation, and the soft-capping, query scaling and window keys; and the refusal of
// bidirectional attention, which no causal LM has.
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "llama_keys.hpp"

namespace llmrdzv::model::detail {

template <typename Config>
std::vector<ConfigKey<Config>> gemma_keys(std::initializer_list<ConfigKey<Config>> own) {
  auto keys = llama_keys<Config>({{"attention_bias", &Config::attention_bias},
                                  {"attn_logit_softcapping", &Config::attn_logit_softcapping},
                                  {"final_logit_softcapping", &Config::final_logit_softcapping},
                                  {"hidden_activation", &Config::hidden_act},
                                  {"query_pre_attn_scalar", &Config::query_pre_attn_scalar},
                                  {"sliding_window", &Config::sliding_window}});
  std::erase_if(keys, [](const auto& key) { return key.name == "hidden_act"; });  // not a Gemma key
  keys.insert(keys.end(), own);
  std::ranges::sort(keys, {}, &ConfigKey<Config>::name);
  return keys;
}

inline void refuse_bidirectional_attention(const json::Value& doc, std::string_view origin) {
  if (const json::Value* both = doc.find("use_bidirectional_attention"); both && both->is_bool() && both->as_bool()) {
    config_fail(origin, "use_bidirectional_attention is not supported (a causal LM attends to earlier positions only)");
  }
}

}  // namespace llmrdzv::model::detail
