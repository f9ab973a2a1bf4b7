// The trainer's command line: flags, --config YAML, precedence, --help, and every kind of bad
// input producing a UsageError that names the problem.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "llmrdzv/train/cli.hpp"

using llmrdzv::train::Command;
using llmrdzv::train::LrSchedulerType;
using llmrdzv::train::parse_command_line;
using llmrdzv::train::Subcommand;
using llmrdzv::train::UsageError;

namespace {

Command parse(std::vector<std::string> args) { return parse_command_line(args); }

// A YAML file in a fresh temporary directory, removed with the object.
struct TempYaml {
  explicit TempYaml(const std::string& text) {
    char pattern[] = "/tmp/trainer-cli-XXXXXX";
    dir = mkdtemp(pattern);
    path = dir + "/config.yaml";
    std::ofstream(path) << text;
  }
  ~TempYaml() { std::filesystem::remove_all(dir); }
  std::string dir;
  std::string path;
};

const std::vector<std::string> kMinimal = {"--do_train", "--train_file", "corpus.txt", "--output_dir", "out"};

std::vector<std::string> minimal_plus(std::vector<std::string> extra) {
  std::vector<std::string> args = kMinimal;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("flags in both spellings set typed fields", "[cli]") {
  const Command c = parse(minimal_plus({"--learning_rate=3e-4", "--max_steps", "100", "--do_eval",
                                        "--overwrite_output_dir", "false", "--lr_scheduler_type", "cosine"}));
  CHECK(c.subcommand == Subcommand::train);
  CHECK(c.train.do_train);
  CHECK(c.train.do_eval);
  CHECK_FALSE(c.train.overwrite_output_dir);
  CHECK(c.train.learning_rate == 3e-4);
  CHECK(c.train.max_steps == 100);
  CHECK(c.train.lr_scheduler_type == LrSchedulerType::cosine);
  CHECK(c.train.train_file == "corpus.txt");
  CHECK(c.train.per_device_train_batch_size == 8);  // untouched default
}

TEST_CASE("the train subcommand name is optional", "[cli]") {
  std::vector<std::string> args = {"train"};
  args.insert(args.end(), kMinimal.begin(), kMinimal.end());
  CHECK(parse(args).train.output_dir == "out");
}

TEST_CASE("a config YAML file sets keys and flags override it wherever --config appears", "[cli]") {
  TempYaml yaml("do_train: true\ntrain_file: docs/\noutput_dir: run1\nlearning_rate: 0.001\n"
                "per_device_train_batch_size: 4\nstreaming: false\n");
  const Command c = parse({"--learning_rate", "0.002", "--config", yaml.path, "--output_dir=run2"});
  CHECK(c.train.config == yaml.path);
  CHECK(c.train.train_file == "docs/");
  CHECK(c.train.per_device_train_batch_size == 4);
  CHECK(c.train.learning_rate == 0.002);
  CHECK(c.train.output_dir == "run2");
}

TEST_CASE("shard sizes read as transformers' max_shard_size", "[cli]") {
  using llmrdzv::train::max_shard_bytes;
  const auto bytes = [](const std::string& text) {
    return max_shard_bytes(parse(minimal_plus({"--save_safetensors_max_shard_size", text})).train);
  };
  CHECK(max_shard_bytes(parse(minimal_plus({})).train) == 5'000'000'000ull);  // the default, 5GB
  CHECK(bytes("200MB") == 200'000'000ull);
  CHECK(bytes("512KiB") == 512ull * 1024);
  CHECK(bytes("2GiB") == 2ull << 30);
  CHECK(bytes("1000") == 1000);
  CHECK(bytes("7B") == 7);
}

TEST_CASE("generate parses its own options", "[cli]") {
  const Command c = parse({"generate", "--model", "run1", "--prompt", "def main(", "--max_new_tokens", "20",
                           "--temperature", "0.7", "--top_k", "10", "--seed", "3"});
  CHECK(c.subcommand == Subcommand::generate);
  CHECK(c.generate.model == "run1");
  CHECK(c.generate.prompt == "def main(");
  CHECK(c.generate.max_new_tokens == 20);
  CHECK(c.generate.temperature == 0.7);
  CHECK(c.generate.top_k == 10);
  CHECK(c.generate.seed == 3);
}

TEST_CASE("tokenizer parses its own options, from flags and a config file", "[cli]") {
  const Command c = parse({"tokenizer", "--train_file", "docs/", "--vocab_size", "8192", "--special_tokens",
                           " <|endoftext|>\t<pad>  <|im_start|> ", "--output_dir", "tok"});
  CHECK(c.subcommand == Subcommand::tokenizer);
  CHECK(c.tokenizer.train_file == "docs/");
  CHECK(c.tokenizer.vocab_size == 8192);
  CHECK(c.tokenizer.min_frequency == 2);  // HF's default
  CHECK(special_token_list(c.tokenizer) == std::vector<std::string>{"<|endoftext|>", "<pad>", "<|im_start|>"});
  TempYaml yaml("train_file: corpus.jsonl\nvocab_size: 4096\nmin_frequency: 3\noutput_dir: a\n");
  const Command f = parse({"tokenizer", "--config", yaml.path, "--output_dir", "b"});
  CHECK(f.tokenizer.vocab_size == 4096);
  CHECK(f.tokenizer.min_frequency == 3);
  CHECK(f.tokenizer.output_dir == "b");
  CHECK(special_token_list(f.tokenizer) == std::vector<std::string>{"<|endoftext|>"});

  CHECK_THROWS_WITH(parse({"tokenizer", "--output_dir", "tok"}), Catch::Contains("tokenizer needs --train_file"));
  CHECK_THROWS_WITH(parse({"tokenizer", "--train_file", "d", "--output_dir", "t", "--special_tokens", " "}),
                    Catch::Contains("--special_tokens needs at least one token"));
  CHECK_THROWS_WITH(parse({"tokenizer", "--train_file", "d", "--output_dir", "t", "--learning_rate", "1"}),
                    Catch::Contains("learning_rate"));
  CHECK_THROWS_WITH(parse({"tokenize", "--train_file", "d"}), Catch::Contains("expected train, generate or tokenizer"));
  const Command h = parse({"tokenizer", "--help"});
  CHECK_THAT(h.help, Catch::Contains("--vocab_size VALUE  (default: 30000)"));
  CHECK_THAT(h.help, Catch::Contains("--min_frequency VALUE  (default: 2)"));
}

TEST_CASE("help lists every option with its default and skips validation", "[cli]") {
  const Command c = parse({"--help"});
  for (const char* expected :
       {"--model_name_or_path", "--config_overrides", "--validation_split_percentage VALUE  (default: 5)",
        "--learning_rate VALUE  (default: 5e-05)", "--lr_scheduler_type VALUE  (default: linear)",
        "--do_train[=true|false]  (default: false)", "--resume_from_checkpoint", "--save_total_limit",
        "--gradient_checkpointing", "--max_eval_samples", "--config FILE", "trainer generate", "trainer tokenizer"}) {
    CHECK_THAT(c.help, Catch::Contains(expected));
  }
  const Command g = parse({"generate", "-h"});
  CHECK_THAT(g.help, Catch::Contains("--temperature VALUE  (default: 1)"));
  CHECK_THAT(g.help, Catch::Contains("--top_k VALUE  (default: 50)"));
  CHECK_FALSE(parse({"--bogus", "--help"}).help.empty());  // help even past a bad option
}

TEST_CASE("an option value of -h or --help is that value and not a request for help", "[cli]") {
  const Command g = parse({"generate", "--model", "m", "--prompt", "-h"});
  CHECK(g.help.empty());
  CHECK(g.generate.prompt == "-h");
  const Command t = parse(minimal_plus({"--logging_dir", "--help", "--do_eval", "true"}));
  CHECK(t.help.empty());
  CHECK(t.train.logging_dir == "--help");
}

TEST_CASE("bad flags are usage errors naming the flag", "[cli][errors]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse(minimal_plus({"--learning_rat", "1"})),
                    Contains("unknown option '--learning_rat'") && Contains("did you mean --learning_rate?"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--frobnicate"})), "unknown option '--frobnicate'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--max_steps", "ten"})), "--max_steps expects an integer, got 'ten'");
  // Batch sizes past any real batch would overflow the global batch (a SIGFPE, or a wrapped size).
  CHECK_THROWS_WITH(parse(minimal_plus({"--per_device_train_batch_size", "4611686018427387904"})),
                    "--per_device_train_batch_size must be in [1, 16777216]");
  CHECK_THROWS_WITH(parse(minimal_plus({"--per_device_train_batch_size", "65536", "--gradient_accumulation_steps", "4096"})),
                    "--per_device_train_batch_size times --gradient_accumulation_steps must be at most 16777216");
  CHECK_THROWS_WITH(parse(minimal_plus({"--gradient_accumulation_steps", "2000000"})),
                    "--gradient_accumulation_steps must be in [1, 1048576]");
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload_chunk_mb", "9223372036854775807"})),
                    "--offload_chunk_mb must be in [1, 1048576] (MiB)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--learning_rate=1e-3x"})), "--learning_rate expects a number, got '1e-3x'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--learning_rate=nan"})), "--learning_rate expects a number, got 'nan'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--do_eval=maybe"})), "--do_eval expects true or false, got 'maybe'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--seed"})), "--seed needs a value");
  CHECK_THROWS_WITH(parse(minimal_plus({"stray"})), Contains("unexpected argument 'stray'"));
  CHECK_THROWS_WITH(parse({"fit"}), Contains("unknown subcommand 'fit'"));
  CHECK_THROWS_WITH(parse({"generate", "--model", "m", "--block_size", "3"}),
                    "unknown option '--block_size'");
}

TEST_CASE("out-of-range and missing options are usage errors", "[cli][errors]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse({"--train_file", "x", "--output_dir", "o"}), Contains("nothing to do"));
  CHECK_THROWS_WITH(parse({"--do_train", "--train_file", "x"}), "--output_dir is required");
  CHECK_THROWS_WITH(parse({"--do_train", "--output_dir", "o"}), "--do_train needs --train_file or --dataset_name");
  CHECK_THROWS_WITH(parse(minimal_plus({"--lr_scheduler_type", "step"})),
                    "--lr_scheduler_type must be linear, cosine, constant or constant_with_warmup, got 'step'");
  for (const char* bad : {"", "0", "5XB", "GB", "-5GB", "5 GB", "99999999999999GB", "999999999999TB"}) {
    CHECK_THROWS_WITH(parse(minimal_plus({"--save_safetensors_max_shard_size", bad})),
                      Catch::Contains("--save_safetensors_max_shard_size must be a positive size"));
  }
  CHECK_THROWS_WITH(parse(minimal_plus({"--per_device_train_batch_size", "0"})),
                    "--per_device_train_batch_size must be in [1, 16777216]");
  CHECK_THROWS_WITH(parse(minimal_plus({"--adam_beta2", "1"})), "--adam_beta2 must be in [0, 1)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--warmup_ratio", "1.5"})), "--warmup_ratio must be in [0, 1]");
  CHECK_THROWS_WITH(parse(minimal_plus({"--max_steps", "0"})), Contains("--max_steps must be -1"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload", "gpu"})), "--offload must be none or optimizer, got 'gpu'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload_gradient_sync", "scatter"})),
                    "--offload_gradient_sync must be auto, reduce or all_reduce, got 'scatter'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload_chunk_mb", "0"})), "--offload_chunk_mb must be in [1, 1048576] (MiB)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--profile_steps", "-1"})), "--profile_steps must not be negative (0 = off)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--save_strategy", "often"})), "--save_strategy must be no, steps, epoch or best, got 'often'");
  CHECK_THROWS_WITH(parse(minimal_plus({"--save_strategy", "epoch", "--streaming", "--max_steps", "5"})),
                    "--save_strategy epoch needs epochs of known length; with --streaming use --save_strategy steps");
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload", "optimizer", "--offload_delayed_update", "-1"})),
                    "--offload_delayed_update must not be negative (0 = never)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload_delayed_update", "40"})),
                    "--offload_delayed_update needs --offload optimizer (it delays the offloaded optimizer's update)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--offload", "optimizer", "--offload_delayed_update", "4", "--shard_parameters", "true"})),
                    "--offload_delayed_update does not combine with --shard_parameters (each rank updates its own shard at once)");
  CHECK_THROWS_WITH(parse(minimal_plus({"--report_to", "tensorboard,none"})),
                    "--report_to none cannot be combined with other names");
  CHECK_THROWS_WITH(parse(minimal_plus({"--do_eval", "--validation_split_percentage", "0"})),
                    Contains("--do_eval needs --validation_file"));
  CHECK_THROWS_WITH(parse({"generate", "--prompt", "x"}), "generate needs --model DIR or NAME");
  CHECK_THROWS_WITH(parse({"generate", "--model", "m", "--temperature", "-1"}), Contains("--temperature must not be negative"));
  // Values that used to reach torch: a 1-token block (every loss NaN), 100000 threads (libgomp
  // crashed), 1e300 epochs (the step count overflowed into 1 step).
  CHECK_THROWS_WITH(parse(minimal_plus({"--block_size", "1"})), Contains("a block of one token has no next token"));
  CHECK_NOTHROW(parse(minimal_plus({"--block_size", "2"})));
  CHECK_THROWS_WITH(parse(minimal_plus({"--threads", "100000"})), "--threads must be between 0 and 1024");
  CHECK_THROWS_WITH(parse({"generate", "--model", "m", "--threads", "1025"}), "--threads must be between 0 and 1024");
  CHECK_THROWS_WITH(parse(minimal_plus({"--num_train_epochs", "1e300"})), "--num_train_epochs must be at most 1e6");
}

TEST_CASE("bad config files are usage errors naming file, line and key", "[cli][errors]") {
  using Catch::Contains;
  {
    TempYaml yaml("do_train: true\nlearning_rte: 0.1\n");
    CHECK_THROWS_WITH(parse({"--config", yaml.path}),
                      Contains(yaml.path + ":2: unknown key 'learning_rte'") && Contains("did you mean --learning_rate?"));
  }
  {
    TempYaml yaml("do_train: true\nmax_steps: lots\n");
    CHECK_THROWS_WITH(parse({"--config", yaml.path}), yaml.path + ":2: key 'max_steps' expects an integer, got 'lots'");
  }
  // Each file's text and what the error names besides the file.
  const std::pair<const char*, const char*> refused[] = {
      {"do_train: [true]\n", "key 'do_train' must be a single value"},
      {"seed:\n", "key 'seed' has no value"},
      {"- do_train\n", "must be a mapping"},
      {"do_train: true\n  bad: [indent\n", "not valid YAML"},
      {"config: other.yaml\n", "unknown key 'config'"},
      {"do_train: true\ndo_train: false\n", ":2: key 'do_train' appears twice"},
      {"do_train: true\n---\ndo_eval: true\n", "holds 2 YAML documents"},
      // yaml-cpp's LoadAll never returned on this one (a stray flow-list comma).
      {"# options\n, do_train: true\n", "not valid YAML: line 2, column 1: unexpected ','"},
  };
  for (const auto& [text, message] : refused) {
    INFO(text);
    TempYaml yaml(text);
    CHECK_THROWS_WITH(parse({"--config", yaml.path}), Contains(yaml.path) && Contains(message));
  }
  CHECK_THROWS_WITH(parse({"--config", "/nonexistent/x.yaml"}), Contains("config file '/nonexistent/x.yaml' cannot be read"));
  // A directory or a FIFO is refused at once (a directory used to abort the trainer, a FIFO to hang it).
  CHECK_THROWS_WITH(parse({"--config", "/tmp"}), Contains("config file '/tmp' cannot be read") && Contains("not a regular file"));
  {
    const std::string fifo = std::filesystem::temp_directory_path() / ("llmrdzv-cli-fifo-" + std::to_string(::getpid()));
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(parse({"--config", fifo}), Contains("not a regular file"));
    std::filesystem::remove(fifo);
  }
  CHECK_THROWS_WITH(parse({"--config"}), "--config needs a file name");
}

TEST_CASE("the shipped configs in etc/trainer parse and validate", "[cli]") {
  for (const char* name : {"default.yaml", "gpt2.yaml", "gpt2-medium.yaml"}) {
    const std::string path = std::string(LLMRDZV_SOURCE_DIR) + "/etc/trainer/" + name;
    INFO(path);
    const Command c = parse({"--config", path});
    CHECK(c.train.do_train);
    CHECK(c.train.train_file == "/usr/share/doc/python3.11/html/_sources");
  }
  CHECK(parse({"--config", std::string(LLMRDZV_SOURCE_DIR) + "/etc/trainer/default.yaml"}).train.max_steps == 300);
}

TEST_CASE("precision flags: --bf16/--tf32 default to auto, --fp16 excludes --bf16", "[cli][precision]") {
  const Command defaults = parse(kMinimal);
  CHECK_FALSE(defaults.train.bf16.has_value());
  CHECK_FALSE(defaults.train.tf32.has_value());
  CHECK_FALSE(defaults.train.fp16);
  const Command flags = parse(minimal_plus({"--bf16", "--tf32", "false"}));
  CHECK(flags.train.bf16 == std::optional<bool>(true));
  CHECK(flags.train.tf32 == std::optional<bool>(false));
  CHECK(parse(minimal_plus({"--bf16=false", "--fp16"})).train.fp16);
  TempYaml yaml("bf16: false\ntf32: true\n");
  const Command from_yaml = parse(minimal_plus({"--config", yaml.path}));
  CHECK(from_yaml.train.bf16 == std::optional<bool>(false));
  CHECK(from_yaml.train.tf32 == std::optional<bool>(true));
  CHECK_THROWS_WITH(parse(minimal_plus({"--fp16", "--bf16"})), "--fp16 and --bf16 cannot both be on");
  CHECK_THROWS_WITH(parse(minimal_plus({"--bf16=maybe"})), Catch::Contains("--bf16 expects true, false or auto"));
  // The default, as --help names it, can be given too (a YAML file may spell it out).
  CHECK_FALSE(parse(minimal_plus({"--bf16=auto", "--tf32", "auto"})).train.bf16.has_value());
  CHECK_FALSE(parse(minimal_plus({"--tf32=true", "--tf32=auto"})).train.tf32.has_value());
  CHECK_THROWS_WITH(parse(minimal_plus({"--do_eval=auto"})), "--do_eval expects true or false, got 'auto'");
  const std::string help = llmrdzv::train::train_help();
  CHECK_THAT(help, Catch::Contains("--bf16[=true|false|auto]  (default: auto)"));
  CHECK_THAT(help, Catch::Contains("auto = on for CUDA GPUs with bf16"));
  CHECK_THAT(help, Catch::Contains("--tf32[=true|false|auto]  (default: auto)"));
}

TEST_CASE("report_to defaults to tensorboard and takes HF's names", "[cli]") {
  CHECK(parse(kMinimal).train.report_to == "tensorboard");
  CHECK(parse(kMinimal).train.logging_dir.empty());
  CHECK(parse(minimal_plus({"--report_to", "all"})).train.report_to == "all");
  CHECK(parse(minimal_plus({"--report_to", "none", "--logging_dir", "tb"})).train.logging_dir == "tb");
}

TEST_CASE("options_yaml lists every option and reads back as the same options", "[cli]") {
  const Command c = parse(minimal_plus({"--learning_rate", "0.00031", "--bf16", "--output_dir", "odd \"dir\" #1: x\\y",
                                        "--config_overrides", "n_embd=64,n_layer=2", "--warmup_ratio", "0.1",
                                        "--lr_scheduler_type", "constant_with_warmup", "--offload", "optimizer",
                                        "--offload_gradient_sync", "all_reduce"}));
  const std::string yaml = llmrdzv::train::options_yaml(c.train);
  CHECK_THAT(yaml, Catch::Contains("learning_rate: 0.00031\n"));
  CHECK_THAT(yaml, Catch::Contains("bf16: true\n"));
  CHECK_THAT(yaml, Catch::Contains("# tf32: auto\n"));  // decided at run time: not pinned by the record
  CHECK_THAT(yaml, Catch::Contains("report_to: \"tensorboard\"\n"));
  CHECK_THAT(yaml, Catch::Contains("lr_scheduler_type: \"constant_with_warmup\"\n"));  // enums as the names typed
  CHECK_THAT(yaml, Catch::Contains("offload: \"optimizer\"\n"));
  CHECK_THAT(yaml, Catch::Contains("offload_gradient_sync: \"all_reduce\"\n"));
  TempYaml file(yaml);
  const Command again = parse({"--config", file.path});
  CHECK(llmrdzv::train::options_yaml(again.train) == yaml);
  CHECK(again.train.output_dir == c.train.output_dir);
  CHECK(again.train.learning_rate == c.train.learning_rate);
  CHECK(again.train.warmup_ratio == c.train.warmup_ratio);
  CHECK_FALSE(again.train.tf32.has_value());
  CHECK(again.train.lr_scheduler_type == LrSchedulerType::constant_with_warmup);
  CHECK(again.train.offload == llmrdzv::train::Offload::optimizer);
  CHECK(again.train.offload_gradient_sync == llmrdzv::train::OffloadGradientSync::all_reduce);
}

TEST_CASE("enum options read their names from flags and YAML, unquoted or quoted", "[cli]") {
  CHECK(parse(kMinimal).train.offload_gradient_sync == llmrdzv::train::OffloadGradientSync::automatic);
  CHECK(parse(minimal_plus({"--offload_gradient_sync=auto"})).train.offload_gradient_sync ==
        llmrdzv::train::OffloadGradientSync::automatic);
  TempYaml yaml("lr_scheduler_type: cosine\noffload: \"optimizer\"\n");
  const Command c = parse(minimal_plus({"--config", yaml.path}));
  CHECK(c.train.lr_scheduler_type == LrSchedulerType::cosine);
  CHECK(c.train.offload == llmrdzv::train::Offload::optimizer);
  TempYaml bad("lr_scheduler_type: Cosine\n");
  CHECK_THROWS_WITH(parse(minimal_plus({"--config", bad.path})),
                    "--lr_scheduler_type must be linear, cosine, constant or constant_with_warmup, got 'Cosine'");
}

TEST_CASE("engine_options hands the engine its options as given, and the engine's defaults are the CLI's", "[cli]") {
  const llmrdzv::engine::EngineOptions defaults = llmrdzv::train::engine_options(parse(kMinimal).train);
  const llmrdzv::engine::EngineOptions engine_defaults;
  CHECK(defaults.use_cpu == engine_defaults.use_cpu);
  CHECK(defaults.threads == engine_defaults.threads);
  CHECK(defaults.offload == engine_defaults.offload);
  CHECK(defaults.offload_chunk_mb == engine_defaults.offload_chunk_mb);
  CHECK(defaults.offload_delayed_update == 0);
  CHECK(defaults.offload_gradient_sync == engine_defaults.offload_gradient_sync);
  CHECK(defaults.ddp_bucket_cap_mb == engine_defaults.ddp_bucket_cap_mb);

  const llmrdzv::engine::EngineOptions given = llmrdzv::train::engine_options(
      parse(minimal_plus({"--use_cpu", "--threads", "3", "--offload", "optimizer", "--offload_chunk_mb", "7",
                          "--offload_delayed_update", "40", "--offload_gradient_sync", "reduce", "--ddp_bucket_cap_mb", "9"}))
          .train);
  CHECK(given.use_cpu);
  CHECK(given.threads == 3);
  CHECK(given.offload == llmrdzv::engine::Offload::optimizer);
  CHECK(given.offload_chunk_mb == 7);
  CHECK(given.offload_delayed_update == 40);
  CHECK(given.offload_gradient_sync == llmrdzv::engine::OffloadGradientSync::reduce);
  CHECK(given.ddp_bucket_cap_mb == 9);
}

TEST_CASE("transformers' evaluation and best-model options take its names and rules", "[cli][training_arguments]") {
  using llmrdzv::train::EvalStrategy;
  using llmrdzv::train::SaveStrategy;
  // Not "no" turns --do_eval on; --eval_steps defaults to --logging_steps.
  Command c = parse(minimal_plus({"--eval_strategy", "steps", "--logging_steps", "7"}));
  CHECK(c.train.do_eval);
  CHECK(c.train.eval_strategy == EvalStrategy::steps);
  CHECK(c.train.eval_steps == 7);
  // The old name, as GPT2-medium's HF Trainer command line has it.
  c = parse(minimal_plus({"--do_train", "True", "--evaluation_strategy", "epoch"}));
  CHECK(c.train.eval_strategy == EvalStrategy::epoch);
  CHECK(c.train.do_eval);
  CHECK_THROWS_WITH(parse(minimal_plus({"--eval_strategy", "steps", "--evaluation_strategy", "steps"})),
                    "--eval_strategy and --evaluation_strategy are two names of one option: give one of them");
  CHECK_THROWS_WITH(parse(minimal_plus({"--eval_strategy", "epoch", "--streaming", "--max_steps", "5"})),
                    Catch::Contains("--eval_strategy epoch needs epochs of known length"));
  // auto keeps --eval_steps' earlier meaning: nothing implied.
  c = parse(minimal_plus({"--eval_steps", "5"}));
  CHECK(c.train.eval_strategy == EvalStrategy::automatic);
  CHECK_FALSE(c.train.do_eval);

  // --load_best_model_at_end: metric loss, lower is better; strategies must match.
  c = parse(minimal_plus({"--eval_strategy", "steps", "--eval_steps", "5", "--save_steps", "10", "--load_best_model_at_end"}));
  CHECK(c.train.metric_for_best_model == "loss");
  CHECK(c.train.greater_is_better == false);
  CHECK_THROWS_WITH(parse(minimal_plus({"--eval_strategy", "steps", "--eval_steps", "4", "--save_steps", "10",
                                        "--load_best_model_at_end"})),
                    Catch::Contains("--save_steps to be a multiple of --eval_steps (4)"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--eval_strategy", "epoch", "--load_best_model_at_end"})),
                    Catch::Contains("--save_strategy to match --eval_strategy"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--load_best_model_at_end"})),
                    Catch::Contains("--load_best_model_at_end needs evaluations during training"));
  // --save_strategy best: a metric and evaluations; transformers' default direction for names
  // that do not end in "loss" is "greater is better".
  c = parse(minimal_plus({"--eval_strategy", "epoch", "--save_strategy", "best", "--metric_for_best_model", "eval_perplexity"}));
  CHECK(c.train.save_strategy == SaveStrategy::best);
  CHECK(c.train.greater_is_better == true);
  CHECK(parse(minimal_plus({"--eval_strategy", "epoch", "--save_strategy", "best", "--metric_for_best_model", "bits_per_byte",
                            "--greater_is_better", "false"}))
            .train.greater_is_better == false);
  CHECK_THROWS_WITH(parse(minimal_plus({"--eval_strategy", "epoch", "--save_strategy", "best"})),
                    Catch::Contains("--save_strategy best needs --metric_for_best_model"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--save_strategy", "best", "--metric_for_best_model", "loss"})),
                    Catch::Contains("give --eval_strategy steps or epoch"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--eval_strategy", "epoch", "--save_strategy", "best", "--metric_for_best_model",
                                        "accuracy"})),
                    Catch::Contains("--metric_for_best_model accuracy is not an evaluation figure of this trainer"));
}

TEST_CASE("options of the replaced tools that mean nothing here are refused with what to do instead", "[cli][training_arguments]") {
  CHECK_THROWS_WITH(parse(minimal_plus({"--torch_compile"})),
                    Catch::StartsWith("--torch_compile is not an option of this trainer: ") && Catch::Contains("own fused kernels"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--trust_remote_code", "True"})), Catch::Contains("Python modelling code"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--per_gpu_train_batch_size", "4"})), Catch::Contains("use --per_device_train_batch_size"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--local_rank=0"})), Catch::Contains("LOCAL_RANK from its environment"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--report_to", "wandb"})),
                    Catch::StartsWith("--report_to wandb is not available: this trainer writes TensorBoard event files"));
  CHECK_THROWS_WITH(parse(minimal_plus({"--report_to", "tensorboard,mlflow"})), Catch::StartsWith("--report_to mlflow"));
  CHECK(parse(minimal_plus({"--report_to", "tensorboard,all"})).train.report_to == "tensorboard,all");
  CHECK_THROWS_WITH(parse(minimal_plus({"--optim", "adafactor"})), Catch::Contains("--optim adafactor is not available"));
  CHECK(parse(minimal_plus({"--optim", "adamw_torch_fused"})).train.optim == "adamw_torch_fused");
  // In a --config file too, naming the file and line.
  TempYaml yaml("do_train: true\ntorch_compile: true\n");
  CHECK_THROWS_WITH(parse({"--config", yaml.path}), Catch::Contains("--torch_compile is not an option of this trainer"));
}

TEST_CASE("run_clm.py's model and data options are accepted with their meaning", "[cli][training_arguments]") {
  Command c = parse(minimal_plus({"--torch_dtype", "bfloat16", "--use_fast_tokenizer", "False", "--dataloader_num_workers", "4"}));
  CHECK(c.train.bf16 == true);
  CHECK_FALSE(c.train.use_fast_tokenizer);
  CHECK(c.train.dataloader_num_workers == 4);
  c = parse(minimal_plus({"--torch_dtype", "float16"}));
  CHECK(c.train.fp16);
  CHECK(parse(minimal_plus({"--torch_dtype", "auto"})).train.bf16 == std::nullopt);
  CHECK_THROWS_WITH(parse(minimal_plus({"--torch_dtype", "float16", "--bf16"})), "--torch_dtype float16 disagrees with --bf16");
  CHECK_THROWS_WITH(parse(minimal_plus({"--torch_dtype", "int8"})), Catch::Contains("--torch_dtype must be auto, float32"));
  CHECK(parse(minimal_plus({"--no_cuda"})).train.use_cpu);
  CHECK_THROWS_WITH(parse(minimal_plus({"--no_cuda", "--use_cpu"})), Catch::Contains("two names of one option"));
}

TEST_CASE("hub revisions and caches take run_clm.py's names", "[cli][hub]") {
  Command c = parse(minimal_plus({"--model_name_or_path", "gpt2"}));
  CHECK(c.train.model_revision == "main");
  CHECK(parse(minimal_plus({"--model_revision", "v1"})).train.model_revision == "v1");
  CHECK(parse(minimal_plus({"--revision", "v2"})).train.model_revision == "v2");
  CHECK_THROWS_WITH(parse(minimal_plus({"--model_revision", "v1", "--revision", "v1"})),
                    "--model_revision and --revision are two names of one option: give one of them");
  CHECK_THROWS_WITH(parse(minimal_plus({"--revision", ""})), Catch::Contains("--model_revision must not be empty"));
  // --cache_dir is the Hugging Face cache; the token cache has its own name.
  c = parse(minimal_plus({"--cache_dir", "/hf", "--token_cache_dir", "/tokens"}));
  CHECK(c.train.cache_dir == "/hf");
  CHECK(c.train.token_cache_dir == "/tokens");
  c = parse({"generate", "--model", "openai-community/gpt2", "--revision", "0123456789abcdef0123456789abcdef01234567",
             "--cache_dir", "/hf"});
  CHECK(c.generate.model_revision == "0123456789abcdef0123456789abcdef01234567");
  CHECK(c.generate.cache_dir == "/hf");
}

TEST_CASE("run_clm.py's dataset options", "[cli][datasets]") {
  Command c = parse({"--do_train", "--output_dir", "o", "--dataset_name", "Salesforce/wikitext", "--dataset_config_name",
                     "wikitext-2-raw-v1", "--preprocessing_num_workers", "4", "--overwrite_cache", "--keep_linebreaks",
                     "False"});
  CHECK(c.train.dataset_name == "Salesforce/wikitext");
  CHECK(c.train.dataset_config_name == "wikitext-2-raw-v1");
  CHECK(c.train.dataset_revision == "main");
  CHECK(c.train.preprocessing_num_workers == 4);
  CHECK(c.train.overwrite_cache);
  CHECK_FALSE(c.train.keep_linebreaks);
  CHECK_THROWS_WITH(parse({"--do_train", "--output_dir", "o", "--dataset_name", "d", "--train_file", "t"}),
                    Catch::Contains("name two datasets"));
  CHECK_THROWS_WITH(parse({"--do_train", "--output_dir", "o", "--dataset_name", "d", "--streaming", "--max_steps", "3"}),
                    Catch::Contains("--streaming reads --train_file"));
}
