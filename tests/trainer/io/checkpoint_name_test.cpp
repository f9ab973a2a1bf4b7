// checkpoint-<step> names: the one writer and the strict reader every part of the trainer uses,
// accepting what Hugging Face's get_last_checkpoint accepts (^checkpoint-(\d+)$, then int()).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "llmrdzv/io/checkpoint_name.hpp"

using llmrdzv::io::checkpoint_dir_name;
using llmrdzv::io::parse_checkpoint_step;

TEST_CASE("checkpoint names round trip", "[checkpoint_name]") {
  for (const std::int64_t step : {std::int64_t{0}, std::int64_t{1}, std::int64_t{500}, std::numeric_limits<std::int64_t>::max()}) {
    CHECK(parse_checkpoint_step(checkpoint_dir_name(step)) == step);
  }
  CHECK(checkpoint_dir_name(42) == "checkpoint-42");
}

TEST_CASE("checkpoint steps parse as Hugging Face reads them", "[checkpoint_name]") {
  CHECK(parse_checkpoint_step("checkpoint-7") == 7);
  CHECK(parse_checkpoint_step("checkpoint-01") == 1);  // \d+ then int(): leading zeros are fine
  CHECK(parse_checkpoint_step("checkpoint-000") == 0);
  CHECK(parse_checkpoint_step("checkpoint-9223372036854775807") == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("anything else is not a checkpoint name", "[checkpoint_name]") {
  for (const std::string name : {"checkpoint-", "checkpoint", "checkpoint-1x", "checkpoint-x1", "checkpoint--1",
                                 "checkpoint--0", "checkpoint-+1", "checkpoint- 1", "checkpoint-1 ", "checkpoint-1.0",
                                 "checkpoint-0x10", "Checkpoint-1", "xcheckpoint-1", ".checkpoint-tmp-12-3",
                                 "rank-1", "", "checkpoint-9223372036854775808",
                                 "checkpoint-99999999999999999999999999"}) {
    INFO(name);
    CHECK(parse_checkpoint_step(name) == std::nullopt);
  }
  CHECK(parse_checkpoint_step(std::string("checkpoint-1\0", 13)) == std::nullopt);
  CHECK(parse_checkpoint_step("checkpoint-\xd9\xa1") == std::nullopt);  // Python's \d takes U+0661; ASCII only here
}
