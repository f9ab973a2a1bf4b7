// Damaged config files: rdzvd's --config (the shipped etc/rdzvd.yaml as the seed) is refused
// with OptionsError, the trainer's --config (the shipped etc/trainer/*.yaml) and --deepspeed (the
// DeepSpeed configs of the trainer's tests) with UsageError, each naming the file or the key, never with yaml-cpp's or the standard library's own exceptions.
// It found yaml-cpp's LoadAll looping for ever on a stray ',' (llmrdzv/common/yaml_document.hpp).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon_options.hpp"
#include "feed_damaged.hpp"
#include "llmrdzv/train/cli.hpp"
#include "scratch_dir.hpp"

using llmrdzv::testing::feed_damaged;
using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;

TEST_CASE("a damaged rdzvd config file is refused with OptionsError", "[malformed][rdzvd]") {
  ScratchDir scratch("malformed-rdzvd");
  const std::string seed = read_file(LLMRDZV_SOURCE_DIR "/etc/rdzvd.yaml");
  feed_damaged<llmrdzv::server::OptionsError>("rdzvd --config", {seed}, 3000, [&](const std::string& text) {
    const std::string path = scratch.write("rdzvd.yaml", text);
    llmrdzv::server::parse_options({"--config", path, "--rdzv-id", "7.0"});  // step mode needs an id
  });
}

TEST_CASE("a damaged trainer config file is refused with UsageError", "[malformed][trainer]") {
  ScratchDir scratch("malformed-trainer");
  std::vector<std::string> seeds;
  for (const char* name : {"default.yaml", "gpt2.yaml"})
    seeds.push_back(read_file(std::string(LLMRDZV_SOURCE_DIR "/etc/trainer/") + name));
  feed_damaged<llmrdzv::train::UsageError>("trainer --config", seeds, 3000, [&](const std::string& text) {
    const std::vector<std::string> args = {"train", "--config", scratch.write("config.yaml", text)};
    llmrdzv::train::parse_command_line(args);  // reads the file and validates the options
  });
}

TEST_CASE("a damaged DeepSpeed config is refused with UsageError", "[malformed][trainer][deepspeed]") {
  ScratchDir scratch("malformed-deepspeed");
  std::vector<std::string> seeds;
  for (const char* name : {"zero2-offload.json", "zero3-offload.json", "explicit-zero2.json"})
    seeds.push_back(read_file(std::string(LLMRDZV_SOURCE_DIR "/tests/trainer/train/deepspeed/") + name));
  feed_damaged<llmrdzv::train::UsageError>("trainer --deepspeed", seeds, 3000, [&](const std::string& text) {
    const std::vector<std::string> args = {"--do_train", "--train_file", "corpus", "--output_dir", "out",
                                           "--deepspeed", scratch.write("ds.json", text)};
    llmrdzv::train::parse_command_line(args);  // reads and maps the config, then validates the options
  });
}
