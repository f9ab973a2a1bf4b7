// The RdzvError a client-library call throws, for tests that check codes and messages; a call that
// throws nothing fails the test.
#pragma once

#include <catch2/catch.hpp>

#include <utility>

#include "llmrdzv/client/client.hpp"

namespace llmrdzv::testing {

template <class Call>
client::RdzvError rdzv_error_of(Call&& call) {
  try {
    std::forward<Call>(call)();
  } catch (const client::RdzvError& error) {
    return error;
  }
  FAIL("no error was thrown");
  return client::RdzvError(client::ErrorCode::internal, "");
}

}  // namespace llmrdzv::testing
