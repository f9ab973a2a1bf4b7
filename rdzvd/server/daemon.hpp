// One rdzvd process: binds the gRPC server (walking the step-port probe sequence when asked),
// publishes the port, and runs the Asio loop that owns the core's timer, the signals (SIGTERM
// and SIGINT stop gracefully, SIGHUP reloads) and the daemon's own idle timeout.
#pragma once

#include <string>
#include <vector>

#include "daemon_options.hpp"

namespace llmrdzv::server {

// Runs until stopped; returns the process exit status. Throws OptionsError for bad input found
// while starting (unreadable token file, unwritable port file, malformed --listen).
int run_daemon(DaemonOptions options, const std::vector<std::string>& args);

// Writes "<port>\n" to path through a temporary file and rename, so readers never see a partial file.
void write_port_file(const std::string& path, int port);
// "PORT\n" to an inherited descriptor (a launcher's pipe), which is then closed.
void write_port_fd(int fd, int port);
// "error: <why>\n" (one line) to the --port-fd descriptor named in `args`, when it is still open:
// a daemon that could not start tells its launcher why. Best effort.
void report_failure(const std::vector<std::string>& args, const std::string& why);

}  // namespace llmrdzv::server
