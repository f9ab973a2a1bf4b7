// rdzvctl's commands: each talks to rdzvd through the client library and prints a plain-text
// report to stdout. Errors propagate as client::RdzvError.
#pragma once

#include <ostream>

#include "ctl_args.hpp"

namespace llmrdzv::ctl {

void run_command(const CtlArgs& args, std::ostream& out);

}  // namespace llmrdzv::ctl
