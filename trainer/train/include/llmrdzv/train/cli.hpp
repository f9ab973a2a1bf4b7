// The `trainer` command line: subcommand, flags and `--config FILE` (the same keys in YAML, flags
// win), turned into validated option structs. Every mistake is a UsageError whose message names
// the flag or key; main prints it and exits 2.
#pragma once

#include <span>
#include <stdexcept>
#include <cstdint>
#include <string>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Subcommand { train, generate, tokenizer };

struct Command {
  Subcommand subcommand = Subcommand::train;
  // Set when -h/--help was given: the text to print (nothing else is parsed or validated).
  std::string help;
  TrainOptions train;
  GenerateOptions generate;
  TokenizerOptions tokenizer;
};

// `args` excludes the program name. `trainer train ...` and `trainer ...` both mean train.
Command parse_command_line(std::span<const std::string> args);

// The --help texts, generated from the option tables with their defaults.
std::string train_help();
std::string generate_help();
std::string tokenizer_help();

// Every `trainer train` option with its value in `options`, one `name: value` line each: a
// --config file that gives the same options (an automatic choice left to run time, such as
// --bf16's, is a comment). The run's record of what it was asked to do.
std::string options_yaml(const TrainOptions& options);

// Cross-option checks (ranges, required options, choices); throws UsageError.
void validate(const TrainOptions& options);
// --save_safetensors_max_shard_size in bytes: "5GB", "200MB", "512KiB", "1000" (KB/MB/GB/TB are
// powers of 1000 and KiB/MiB/GiB/TiB of 1024, as in transformers). Throws UsageError when malformed.
std::uint64_t max_shard_bytes(const TrainOptions& options);
void validate(const GenerateOptions& options);
void validate(const TokenizerOptions& options);
// --special_tokens as a list (split at whitespace).
std::vector<std::string> special_token_list(const TokenizerOptions& options);

}  // namespace llmrdzv::train
