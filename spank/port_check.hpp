// Whether MASTER_PORT is free on the step's first node before any task starts (issue 39: another
// user who squats the port makes rank 0's c10d TCPStore fail with EADDRINUSE and sends every
// other rank to the squatter, where they hang until their process-group timeout). The step's first
// node checks it the way the TCPStore binds it, and names whoever holds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace llmrdzv::spank {

// nullopt when a TCP listener could take `port` on every address now (bound and listened to with
// SO_REUSEADDR on [::], dual-stack, or 0.0.0.0 where IPv6 is off, as c10d's TCPStore does), else
// what holds it: "a listening socket of uid N (NAME)" from /proc/net/tcp and tcp6 where the kernel
// shows it, or the bind error.
std::optional<std::string> port_taken(std::uint16_t port);

// The listening socket on `port` in /proc/net/tcp-format `table` text: its owner's uid, or nullopt.
// Split out so that the parser is tested on fixed text.
std::optional<unsigned> listener_uid(const std::string& table, std::uint16_t port);

}  // namespace llmrdzv::spank
