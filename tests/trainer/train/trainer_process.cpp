// fork/exec of the trainer binary with stdout and stderr sent to files (no shell, no quoting).
#include "trainer_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace trainer_test {

TrainerProcess::TrainerProcess(const std::vector<std::string>& args, Stdout stdout_to,
                               std::uint64_t address_space_limit) {
  // Made here, not only in the child, so that stdout_text() can read them from the start.
  const std::string out_path = capture_.write("stdout", "");
  const std::string err_path = capture_.write("stderr", "");
  std::vector<std::string> copies = args;
  copies.insert(copies.begin(), TRAINER_BINARY);
  std::vector<char*> argv;
  for (auto& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int broken_pipe[2] = {-1, -1};
  if (stdout_to == Stdout::closed_pipe) {
    if (pipe(broken_pipe) != 0) throw std::runtime_error("pipe failed");
    close(broken_pipe[0]);
  }
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    signal(SIGPIPE, SIG_DFL);  // as a shell starts a command, whatever the test runner set
    const int out = stdout_to == Stdout::closed_pipe ? broken_pipe[1]
                                                     : open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    if (address_space_limit > 0) {
      const rlimit limit{address_space_limit, address_space_limit};
      if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(126);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (broken_pipe[1] >= 0) close(broken_pipe[1]);
}

TrainerProcess::~TrainerProcess() { kill_now(); }

bool TrainerProcess::running() {
  if (status_ >= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == 0) return true;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return false;
}

std::string TrainerProcess::stdout_text() const { return llmrdzv::testing::read_file(capture_ / "stdout"); }
std::string TrainerProcess::stderr_text() const { return llmrdzv::testing::read_file(capture_ / "stderr"); }

int TrainerProcess::kill_now() {
  if (running()) kill(pid_, SIGKILL);
  return wait();
}

int TrainerProcess::wait() {
  if (status_ < 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return status_;
}

RunResult run_trainer(const std::vector<std::string>& args, Stdout stdout_to) {
  TrainerProcess process(args, stdout_to);
  RunResult result;
  result.exit_code = process.wait();
  result.out = process.stdout_text();
  result.err = process.stderr_text();
  return result;
}

}  // namespace trainer_test
