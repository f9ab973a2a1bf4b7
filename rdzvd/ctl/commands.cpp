// ping, list, show and kv (see commands.hpp).
#include "commands.hpp"

#include <chrono>
#include <cstdio>
#include <iomanip>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/common/token.hpp"

namespace llmrdzv::ctl {
namespace {

using client::Client;

constexpr std::size_t kValuePreviewBytes = 120;

Client connect(const CtlArgs& args) {
  client::Options options;
  options.endpoint = args.endpoint;
  options.port_range = args.port_range;
  options.port_probes = args.port_probes;
  options.rdzv_id = args.rdzv_id;
  options.token = args.token;
  options.connect_timeout = args.timeout;
  options.call_deadline = args.timeout;
  options.probe_deadline = std::min<std::chrono::milliseconds>(args.timeout, std::chrono::seconds(1));
  options.participant_id = "rdzvctl";
  return Client(options);
}

// Printable text with non-printing bytes as \xNN, cut to a preview.
std::string printable(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < kValuePreviewBytes; ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out.push_back(char(byte));
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  if (bytes.size() > kValuePreviewBytes) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

void print_rendezvous_table(const std::vector<RendezvousStatus>& all, std::ostream& out) {
  out << std::left << std::setw(24) << "ID" << std::setw(7) << "ROUND" << std::setw(11) << "STATE" << std::setw(12)
      << "MIN:MAX" << std::setw(8) << "JOINED" << std::setw(9) << "MEMBERS" << std::setw(9) << "WAITING" << std::setw(8)
      << "KEYS" << std::setw(11) << "KV_BYTES" << "AGE_S\n";
  for (const auto& r : all) {
    out << std::left << std::setw(24) << r.rdzv_id << std::setw(7) << r.round << std::setw(11) << r.state
        << std::setw(12) << (std::to_string(r.min_participants) + ":" + std::to_string(r.max_participants))
        << std::setw(8) << r.joined << std::setw(9) << r.members << std::setw(9) << r.waiting << std::setw(8)
        << r.num_keys << std::setw(11) << r.kv_bytes << (r.age_ms / 1000) << "\n";
  }
}

// "version=V mode=M" from rdzvd's refusal of a tokenless call ("... rdzvd-gate version=V mode=M: why"),
// or "" when the error is not that refusal.
std::string refusal_identity(const client::RdzvError& error) {
  const std::string message = error.what();
  const auto start = message.find(kGateRefusalPrefix);
  if (error.code() != client::ErrorCode::permission_denied || start == std::string::npos) return {};
  const auto from = start + kGateRefusalPrefix.size();
  return message.substr(from, message.find(": ", from) - from);
}

void ping(const CtlArgs& args, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  Client client = connect(args);
  const auto elapsed = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  if (args.rdzv_id.empty()) {
    // Tokenless: rdzvd refuses the call from its headers, and that refusal is the answer.
    try {
      client.status(false);
    } catch (const client::RdzvError& error) {
      const std::string identity = refusal_identity(error);
      if (identity.empty()) throw;
      out << "rdzvd " << client.endpoint() << " answers: " << identity
          << " (without --id and --token it shows nothing more) time_ms=" << std::fixed << std::setprecision(1)
          << elapsed() << "\n";
      return;
    }
  }
  const auto status = client.status(false);
  out << "rdzvd " << client.endpoint() << " answers: version=" << status.version << " mode=" << status.mode
      << " uptime_ms=" << status.uptime_ms << " rendezvous=" << status.totals.rendezvous
      << " members=" << status.totals.members << " time_ms=" << std::fixed
      << std::setprecision(1) << elapsed() << "\n";
}

void list(const CtlArgs& args, std::ostream& out) {
  const auto status = connect(args).status(false);
  out << "rdzvd mode=" << status.mode << " version=" << status.version << " uptime_ms=" << status.uptime_ms
      << " rendezvous=" << status.totals.rendezvous << " members=" << status.totals.members
      << " waiting=" << status.totals.waiting << " kv_bytes=" << status.totals.kv_bytes << "\n";
  if (status.mode == "site") {
    out << "(site mode: the rendezvous themselves are shown only to their users: rdzvctl show ID --token TOKEN)\n";
    return;
  }
  print_rendezvous_table(status.rendezvous, out);
}

void show(const CtlArgs& args, std::ostream& out) {
  const auto status = connect(args).status(true);
  for (const auto& r : status.rendezvous) {
    if (r.rdzv_id != args.rdzv_id) continue;
    print_rendezvous_table({r}, out);
    out << "\n" << std::left << std::setw(6) << "RANK" << std::setw(32) << "PARTICIPANT" << std::setw(20) << "HOST"
        << std::setw(11) << "LOCAL_RANK" << std::setw(14) << "HEARTBEAT_MS" << "SESSION\n";
    for (const auto& m : r.member_details) {
      out << std::left << std::setw(6) << m.rank << std::setw(32) << m.participant_id << std::setw(20) << m.host
          << std::setw(11) << m.local_rank << std::setw(14) << m.last_heartbeat_age_ms
          << (m.session_open ? "open" : "closed") << "\n";
    }
    return;
  }
  throw client::RdzvError(client::ErrorCode::not_found, "rdzvd does not list rendezvous '" + args.rdzv_id + "'");
}

void kv(const CtlArgs& args, std::ostream& out) {
  Client client = connect(args);
  const auto space = client.kv(args.round);
  const auto keys = space.list_keys();
  out << keys.size() << " keys in round " << args.round << " of '" << args.rdzv_id << "'\n";
  for (const auto& key : keys) {
    out << printable(key) << " = ";
    try {
      out << printable(space.get(key, std::chrono::milliseconds(0))) << "\n";
    } catch (const client::RdzvError& error) {
      out << "<" << client::error_code_name(error.code()) << ">\n";  // deleted meanwhile, or a queue
    }
  }
}

}  // namespace

void run_command(const CtlArgs& args, std::ostream& out) {
  switch (args.command) {
    case Command::ping: return ping(args, out);
    case Command::list: return list(args, out);
    case Command::show: return show(args, out);
    case Command::kv: return kv(args, out);
  }
}

}  // namespace llmrdzv::ctl
