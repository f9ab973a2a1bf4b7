// The `trainer` binary: parse the command line, then train, generate, train a tokenizer, or
// (--nproc N) launch N local ranks. Usage errors exit 2, a rank stopped by another rank's failure (or that could not
// re-join an elastic rendezvous after one) exits 3, every other failure (bad corpus, model,
// checkpoint, I/O) exits 1; each prints one "trainer: error: ..." line naming the problem.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <c10/util/Exception.h>

#include "checkpoint_state.hpp"
#include "llmrdzv/engine/single_process_engine.hpp"
#include "llmrdzv/engine/training_engine.hpp"
#include "llmrdzv/io/checkpoint_name.hpp"
#include "llmrdzv/train/cli.hpp"
#include "llmrdzv/train/generate.hpp"
#include "llmrdzv/train/tokenizer_training.hpp"
#include "llmrdzv/train/train_loop.hpp"
#include "standalone_launcher.hpp"
#if LLMRDZV_TRAINER_DISTRIBUTED
#include "llmrdzv/dist/distributed_engine.hpp"
#endif

namespace {

using llmrdzv::engine::TrainingEngine;
using llmrdzv::train::TrainOptions;

#if LLMRDZV_TRAINER_DISTRIBUTED
// An elastic step's survivors restart from the newest checkpoint: a run that writes none before
// its end starts over from step 0 after every failure, which the user should know at the start.
void warn_if_elastic_without_checkpoints(const TrainOptions& options, const TrainingEngine& engine) {
  using llmrdzv::train::SaveStrategy;
  const bool none_before_end = options.save_strategy == SaveStrategy::no ||
                               (options.save_strategy == SaveStrategy::steps && options.save_steps == 0);
  if (!none_before_end || !engine.is_main() || !llmrdzv::dist::rendezvous_env_elastic()) return;
  std::cerr << "trainer: warning: the rendezvous is elastic, but "
            << (options.save_strategy == SaveStrategy::no ? "--save_strategy no writes no checkpoint"
                                                          : "--save_steps 0 writes a checkpoint only at the end")
            << ": a restart after a rank fails will start training over from step 0\n";
}

// Which checkpoint the ranks resume from, decided by rank 0 for all of them (ranks looking at the
// directory a moment apart could otherwise disagree, e.g. around a save that just finished):
// with "--resume_from_checkpoint latest", and always in a rank restarted after a peer failed
// (elastic): the newest complete checkpoint in output_dir; a restarted run without one starts
// over (replacing what the failed attempt wrote when the run did not start from a checkpoint).
void agree_on_checkpoint(TrainOptions& options, TrainingEngine& engine, bool restarted) {
  if (options.resume_from_checkpoint != "latest" && !restarted) return;
  double step = -1;
  if (engine.is_main()) {
    std::vector<std::string> rejected;
    const auto latest = llmrdzv::train::latest_complete_checkpoint(options.output_dir, /*verify=*/true, &rejected);
    for (const std::string& reason : rejected) std::cerr << "trainer: skipping broken checkpoint " << reason << '\n';
    if (latest) step = static_cast<double>(*llmrdzv::io::parse_checkpoint_step(latest->filename().string()));
  }
  step = engine.all_reduce_sum({engine.is_main() ? step : 0.0})[0];
  if (step >= 0) {
    options.resume_from_checkpoint =
        (std::filesystem::path(options.output_dir) / llmrdzv::io::checkpoint_dir_name(static_cast<std::int64_t>(step)))
            .string();
  } else if (restarted && options.resume_from_checkpoint.empty()) {
    options.overwrite_output_dir = true;
  }
}
#endif

// Many ranks when the environment names a rendezvous (srun --llm-rdzv), else one process.
void train(TrainOptions options, const std::vector<std::string>& argv) {
  const llmrdzv::engine::EngineOptions engine_options = llmrdzv::train::engine_options(options);
#if LLMRDZV_TRAINER_DISTRIBUTED
  if (llmrdzv::dist::rendezvous_env_present()) {
    const bool restarted = llmrdzv::dist::restart_budget_from_env().done > 0;
    llmrdzv::dist::ElasticRestart restart;
    restart.argv = argv;
    restart.latest_checkpoint = [output_dir = options.output_dir]() -> std::optional<std::string> {
      const auto latest = llmrdzv::train::latest_complete_checkpoint(output_dir, /*verify=*/false);
      if (!latest) return std::nullopt;
      return latest->filename().string();
    };
    const auto engine = llmrdzv::dist::make_distributed_engine(engine_options, std::move(restart));
    warn_if_elastic_without_checkpoints(options, *engine);
    agree_on_checkpoint(options, *engine, restarted);
    llmrdzv::train::run_training(options, *engine);
    return;
  }
#endif
  (void)argv;
  const auto engine = llmrdzv::engine::make_single_process_engine(engine_options);
  llmrdzv::train::run_training(options, *engine);
}

// What to change when a training step does not fit in memory (nothing for generate); moving the
// optimizer to the host helps only a GPU.
std::string memory_advice(bool training, bool gpu) {
  if (!training) return "";
  return std::string("  use a smaller --per_device_train_batch_size (with more --gradient_accumulation_steps to keep the "
                     "batch) or --block_size, ") +
         (gpu ? "--gradient_checkpointing, or --offload optimizer\n" : "or --gradient_checkpointing\n");
}

// The size torch's CPU allocator could not get, read from its message ("DefaultCPUAllocator: can't
// allocate memory: you tried to allocate N bytes. ..." or "... not enough memory: ..."; 0 when it
// gives none); nullopt for every other error.
std::optional<double> failed_host_allocation_bytes(const c10::Error& e) {
  const std::string& message = e.msg();
  if (message.find("DefaultCPUAllocator: can't allocate memory") == std::string::npos &&
      message.find("DefaultCPUAllocator: not enough memory") == std::string::npos) {
    return std::nullopt;
  }
  constexpr std::string_view kTried = "you tried to allocate ";
  const auto at = message.find(kTried);
  if (at == std::string::npos) return 0.0;
  return std::strtod(message.c_str() + at + kTried.size(), nullptr);
}

// `bytes`: the failed allocation's size, 0 when unknown.
int host_memory_error(double bytes, bool training) {
  std::cerr << "\ntrainer: error: host memory ran out";
  if (bytes > 0) {
    char size[64];
    std::snprintf(size, sizeof size, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    std::cerr << " (an allocation of " << size << " failed)";
  }
  std::cerr << '\n' << memory_advice(training, /*gpu=*/false);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace llmrdzv::train;
  // Gloo writes to its peers' sockets with plain writev, so a peer killed in the middle of a
  // collective would take this rank down with SIGPIPE before the failure watch could report the
  // peer or restart the survivors. Ignored, the write fails with EPIPE and Gloo raises an error the
  // trainer handles; a closed stdout (a log pipe that went away) no longer ends a run either.
  std::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  Command command;
  try {
    command = parse_command_line(args);
  } catch (const UsageError& e) {
    std::cerr << "trainer: error: " << e.what() << "\n(see trainer --help)\n";
    return 2;
  }
  if (!command.help.empty()) {
    std::cout << command.help;
    return 0;
  }
  const bool training = command.subcommand == Subcommand::train;
  try {
    if (command.subcommand == Subcommand::generate) {
      std::cout << generate_text(command.generate) << std::endl;
    } else if (command.subcommand == Subcommand::tokenizer) {
      train_tokenizer(command.tokenizer, stderr);
    } else if (command.train.nproc > 0) {
      return run_standalone(args, static_cast<int>(command.train.nproc));
    } else if (command.train.offload == llmrdzv::train::Offload::optimizer && !rendezvous_in_environment()) {
      // Sharded offload lives in the distributed engine: one process gets a world of one.
      return run_standalone(args, 1);
    } else {
      train(command.train, std::vector<std::string>(argv, argv + argc));
    }
#if LLMRDZV_TRAINER_DISTRIBUTED
  } catch (const llmrdzv::dist::RejoinError& e) {
    std::fflush(stdout);
    std::cerr << "\ntrainer: error: " << e.what() << '\n';
    return llmrdzv::dist::kPeerFailedExitCode;
#endif
  } catch (const c10::OutOfMemoryError& e) {
    std::fflush(stdout);
    // torch's message goes on about its allocator; what it ran out of is in the first sentences.
    std::string what = e.what_without_backtrace();
    what = what.substr(0, std::min(what.find(". Including"), what.find('\n')));
    std::cerr << "\ntrainer: error: the GPU ran out of memory (" << what << ")\n" << memory_advice(training, /*gpu=*/true);
    return 1;
  } catch (const std::exception& e) {
#if LLMRDZV_TRAINER_DISTRIBUTED
    llmrdzv::dist::yield_to_failure_watch();  // a peer failed: the watch reports it (exit 3 or restart)
#endif
    std::fflush(stdout);
    // torch's errors carry a C++ backtrace in what(): the one line without it says the problem.
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    if (dynamic_cast<const std::bad_alloc*>(&e)) return host_memory_error(0, training);
    if (torch_error) {
      if (const auto bytes = failed_host_allocation_bytes(*torch_error)) return host_memory_error(*bytes, training);
    }
    std::cerr << "\ntrainer: error: " << (torch_error ? torch_error->what_without_backtrace() : e.what()) << '\n';
    return 1;
  }
  return 0;
}
