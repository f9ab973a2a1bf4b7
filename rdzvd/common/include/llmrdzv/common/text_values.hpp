// The one parser of each small textual value the project reads from flags, environment
// variables, config files and plugstack.conf: whole numbers in a range, HOST:PORT, and secret
// files. Callers add their own wording (which flag, which key) to the failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmrdzv {

// A decimal whole number in [min, max], nothing else: no sign for unsigned, no spaces, no
// leading '+', no trailing text. nullopt otherwise (also on overflow).
std::optional<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t min, std::uint64_t max);
std::optional<std::int64_t> parse_signed(std::string_view text, std::int64_t min, std::int64_t max);

struct HostPort {
  std::string host;  // as written ("[::1]" keeps its brackets)
  std::uint16_t port = 0;
};

// "HOST:PORT" or "[V6]:PORT" with a non-empty host and a port in min_port..65535 (0 lets a
// listener take any port). nullopt otherwise.
std::optional<HostPort> parse_host_port(std::string_view text, std::uint16_t min_port = 1);

// A secret (a token, a site secret) from a file: opened without following a symbolic link or
// blocking on a FIFO, a regular file of at most 64 KiB, trailing whitespace dropped, not empty. With
// `required_owner`: the file must belong to that uid and have no group or other permissions.
// Throws std::runtime_error: "cannot read 'PATH': ...", "'PATH' is not a regular file",
// "'PATH' must be owned by uid N with no group or other permissions (chmod 600)", "'PATH' is
// empty".
std::string read_secret_file(const std::string& path, std::optional<unsigned> required_owner = std::nullopt);

// A whole regular file of at most max_bytes (a config file), opened without blocking on a FIFO.
// Throws std::runtime_error: "cannot read 'PATH': ...", "'PATH' is not a regular file", "'PATH' is
// larger than N KiB".
std::string read_regular_file(const std::string& path, std::size_t max_bytes);

}  // namespace llmrdzv
