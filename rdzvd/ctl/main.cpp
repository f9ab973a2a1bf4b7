// rdzvctl: the admin and debugging CLI of rdzvd (ping, list, show a rendezvous, dump a key-value
// space). Maps errors to distinct exit codes so scripts can tell "down" from "denied".
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "ctl_args.hpp"
#include "llmrdzv/client/error.hpp"

namespace {

int exit_code_of(llmrdzv::client::ErrorCode code) {
  using llmrdzv::client::ErrorCode;
  switch (code) {
    case ErrorCode::unavailable: return 3;
    case ErrorCode::permission_denied: return 4;
    case ErrorCode::not_found: return 5;
    case ErrorCode::invalid_argument: return 2;
    default: return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto args = llmrdzv::ctl::parse_ctl_args(argc, argv);
    if (args.help) {
      std::cout << llmrdzv::ctl::kUsage;
      return 0;
    }
    llmrdzv::ctl::run_command(args, std::cout);
    return 0;
  } catch (const llmrdzv::ctl::UsageError& error) {
    std::cerr << "rdzvctl: " << error.what() << "\n" << llmrdzv::ctl::kUsage;
    return 2;
  } catch (const llmrdzv::client::RdzvError& error) {
    std::cerr << "rdzvctl: " << llmrdzv::client::error_code_name(error.code()) << ": " << error.what() << "\n";
    return exit_code_of(error.code());
  }
}
