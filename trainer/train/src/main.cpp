// The `trainer` binary: parse the command line, then train, generate, or (--nproc N) launch N
// local ranks. Usage errors exit 2,
// every other failure (bad corpus, model, checkpoint, I/O) exits 1; both print one
// "trainer: error: ..." line naming the problem.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "llmrdzv/train/cli.hpp"
#include "llmrdzv/train/generate.hpp"
#include "llmrdzv/train/train_loop.hpp"
#include "llmrdzv/train/training_engine.hpp"
#include "standalone_launcher.hpp"
#if LLMRDZV_TRAINER_DISTRIBUTED
#include "llmrdzv/dist/distributed_engine.hpp"
#endif

namespace {

// Many ranks when the environment names a rendezvous (srun --llm-rdzv), else one process.
std::unique_ptr<llmrdzv::train::TrainingEngine> make_engine(const llmrdzv::train::TrainOptions& options) {
#if LLMRDZV_TRAINER_DISTRIBUTED
  if (llmrdzv::dist::rendezvous_env_present()) return llmrdzv::dist::make_distributed_engine(options);
#endif
  return llmrdzv::train::make_single_process_engine(options);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace llmrdzv::train;
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
  try {
    if (command.subcommand == Subcommand::generate) {
      std::cout << generate_text(command.generate) << std::endl;
    } else if (command.train.nproc > 0) {
      return run_standalone(args, static_cast<int>(command.train.nproc));
    } else if (command.train.offload == "optimizer" && !rendezvous_in_environment()) {
      // Sharded offload lives in the distributed engine: one process gets a world of one.
      return run_standalone(args, 1);
    } else {
      const auto engine = make_engine(command.train);
      run_training(command.train, *engine);
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "\ntrainer: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
