// Damaged command lines: `trainer` (train and generate) refuses them with UsageError and rdzvd
// with OptionsError, whose messages main() prints before exiting 2; never with a conversion's
// own exception ("stod", "stoull") or a wrapped-around value. The seeds use most options; the
// damage splits, joins, drops and repeats words and puts edge numbers into values.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "daemon_options.hpp"
#include "feed_damaged.hpp"
#include "llmrdzv/train/cli.hpp"

using llmrdzv::testing::feed_damaged;

namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace

TEST_CASE("damaged trainer command lines are refused with UsageError", "[malformed][trainer]") {
  const std::vector<std::string> seeds = {
      "train --model_name_or_path gpt2 --train_file data.txt --validation_split_percentage 5 --block_size 128 "
      "--per_device_train_batch_size 4 --gradient_accumulation_steps 2 --learning_rate 3e-4 --weight_decay 0.1 "
      "--max_grad_norm 1.0 --max_steps 10 --lr_scheduler_type cosine --warmup_ratio 0.1 --seed 7 --do_train "
      "--do_eval --eval_steps 5 --output_dir out --save_steps 5 --save_total_limit 2 --logging_steps 1 "
      "--save_safetensors_max_shard_size 200MB --threads 2 --ddp_bucket_cap_mb 25",
      "--config_name gpt2 --config_overrides n_layer=2,n_embd=64,n_head=2 --tokenizer_name tok --train_file d "
      "--streaming --max_steps 50 --offload optimizer --offload_chunk_mb 4 --offload_delayed_update 2 "
      "--gradient_checkpointing --nproc 2 --do_train --output_dir o --overwrite_output_dir --resume_from_checkpoint o/checkpoint-4",
      "generate --model out --prompt hello --max_new_tokens 20 --temperature 0.8 --top_k 40 --seed 3 --threads 1",
  };
  feed_damaged<llmrdzv::train::UsageError>("trainer argv", seeds, 4000, [](const std::string& line) {
    const std::vector<std::string> args = words(line);
    llmrdzv::train::parse_command_line(args);
  });
}

TEST_CASE("damaged rdzvd command lines are refused with OptionsError", "[malformed][rdzvd]") {
  const std::vector<std::string> seeds = {
      "--rdzv-id 7.0 --listen 127.0.0.1:29500 --port-range 29500-29999 --port-probes 4 --participants 2:4 "
      "--heartbeat-interval 1000 --heartbeat-timeout 5000 --last-call 3000 --join-timeout 60000 "
      "--idle-timeout 600 --max-bytes 1000000 --log-level debug --exit-with-parent --max-unauthenticated-per-peer 64",
      "--mode site --listen 0.0.0.0:29400 --site-secret-file /etc/llm-rdzv/secret --metrics-listen 127.0.0.1:9464 "
      "--metrics-expose-ids --max-message-bytes 33554432 --rendezvous-idle-timeout 3600000 --syslog",
  };
  feed_damaged<llmrdzv::server::OptionsError>("rdzvd argv", seeds, 4000, [](const std::string& line) {
    llmrdzv::server::parse_options(words(line));
  });
}
