// Environment variables set for one scope and restored after it: tests of code that reads its
// settings from the environment (the Hugging Face cache variables, say) name the variables they
// manage, set those given and unset the others, so neither the machine's values nor another test's
// leak in. Not thread-safe, as setenv is not: tests that use it run their cases one at a time.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmrdzv::testing {

class ScopedEnvironment {
 public:
  ScopedEnvironment(std::initializer_list<const char*> managed, const std::map<std::string, std::string>& values) {
    for (const char* name : managed) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      const auto value = values.find(name);
      if (value != values.end()) {
        ::setenv(name, value->second.c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace llmrdzv::testing
