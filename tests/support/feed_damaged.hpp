// The check every test in this folder makes: a parser fed thousands of damaged copies of valid
// inputs either accepts one (and what it built then holds up, checked by the caller's lambda) or
// refuses it with the component's own error type and a message. Any other outcome is a defect the
// user would meet as an unclear message ("vector::_M_range_check", "stoull"), a std::bad_alloc, a
// crash (which ASan/UBSan in CI turns into a report), or a hang.
#pragma once

#include <cxxabi.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "input_mutator.hpp"

namespace llmrdzv::testing {

// Thrown by a caller's lambda when an accepted input built something wrong.
struct Broken : std::logic_error {
  using std::logic_error::logic_error;
};

struct DamageReport {
  int accepted = 0;
  int refused = 0;
};

inline std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type.name();
}

// Whether some damaged copies must be refused: true of a parser (a check of a parser that accepts
// anything must fail), not of a reader that repairs what it is given.
enum class Refusals { expected, none_expected };

// Each seed must be accepted as it is; then `cases` damaged copies of it are fed to parse(input).
// Up to three offenders are reported, each with its seed, case and input.
template <class Error, class Parse>
DamageReport feed_damaged(std::string_view target, const std::vector<std::string>& seeds, int cases, Parse&& parse,
                          Refusals refusals = Refusals::expected) {
  DamageReport report;
  int offenders = 0;
  for (std::size_t s = 0; s < seeds.size() && offenders < 3; ++s) {
    INFO(target << ", seed input " << s << ": \"" << printable(seeds[s]) << "\"");
    REQUIRE_NOTHROW(parse(seeds[s]));
    InputMutator mutator(s + 1);
    for (int c = 0; c < cases && offenders < 3; ++c) {
      const std::string input = mutator.mutate(seeds[s]);
      std::string outcome;
      try {
        parse(input);
        ++report.accepted;
      } catch (const Error& e) {
        ++report.refused;
        if (std::string_view(e.what()).empty()) outcome = "refused with an empty message";
      } catch (const std::exception& e) {
        outcome = type_name(typeid(e)) + ": " + e.what();
      }
      if (!outcome.empty()) {
        ++offenders;
        FAIL_CHECK(target << ", seed " << s << " case " << c << ": " << outcome << "\n  input: \"" << printable(input)
                          << "\"");
      }
    }
  }
  CHECK(offenders == 0);
  if (refusals == Refusals::expected) CHECK(report.refused > 0);
  else CHECK(report.refused == 0);
  return report;
}

}  // namespace llmrdzv::testing
