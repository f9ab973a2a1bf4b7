// rdzvd's options: one table of settings, each reachable as a YAML key and a flag (see
// daemon_options.hpp and etc/rdzvd.yaml).
#include "daemon_options.hpp"

#include "llmrdzv/common/text_values.hpp"
#include "llmrdzv/common/yaml_document.hpp"

#include <fcntl.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

namespace llmrdzv::server {
namespace {

using Setter = std::function<void(DaemonOptions&, const std::string& value, const std::string& where)>;
using Getter = std::function<std::string(const DaemonOptions&)>;

struct Setting {
  std::string key;   // YAML key ("limits.x" is x under limits:)
  std::string flag;  // command-line flag
  bool reloadable;
  bool is_switch;    // flag takes no value
  Setter set;
  Getter get;
};

template <class T>
T parse_number(const std::string& value, const std::string& where) {
  const auto parsed = parse_unsigned(value, 0, std::numeric_limits<T>::max());
  if (!parsed)
    throw OptionsError(where + ": '" + value + "' is not a whole number in range (0.." +
                       std::to_string(std::numeric_limits<T>::max()) + ")");
  return T(*parsed);
}

bool parse_bool(const std::string& value, const std::string& where) {
  if (value == "true" || value == "yes" || value == "on" || value == "1") return true;
  if (value == "false" || value == "no" || value == "off" || value == "0") return false;
  throw OptionsError(where + ": '" + value + "' is not a boolean (true/false)");
}

template <class T>
Setting number(std::string key, std::string flag, bool reloadable, T DaemonOptions::*field) {
  return {key, flag, reloadable, false,
          [field](DaemonOptions& o, const std::string& v, const std::string& w) { o.*field = parse_number<T>(v, w); },
          [field](const DaemonOptions& o) { return std::to_string(o.*field); }};
}

template <class T>
Setting limit(std::string name, T core::Limits::*field) {
  return {"limits." + name, "--" + [&] {
            std::string f = name;
            for (char& c : f) c = c == '_' ? '-' : c;
            return f;
          }(),
          true, false,
          [field](DaemonOptions& o, const std::string& v, const std::string& w) {
            const T parsed = parse_number<T>(v, w);
            if (parsed == 0) throw OptionsError(w + ": must be at least 1");
            o.core.limits.*field = parsed;
          },
          [field](const DaemonOptions& o) { return std::to_string(o.core.limits.*field); }};
}

Setting millis(std::string key, std::string flag, core::Millis core::CoreSettings::*field) {
  return {key, flag, true, false,
          [field](DaemonOptions& o, const std::string& v, const std::string& w) {
            const auto parsed = parse_number<std::uint32_t>(v, w);
            if (parsed == 0) throw OptionsError(w + ": must be at least 1 ms");
            o.core.*field = core::Millis(parsed);
          },
          [field](const DaemonOptions& o) { return std::to_string((o.core.*field).count()); }};
}

Setting text(std::string key, std::string flag, std::string DaemonOptions::*field) {
  return {key, flag, false, false,
          [field](DaemonOptions& o, const std::string& v, const std::string&) { o.*field = v; },
          [field](const DaemonOptions& o) { return o.*field; }};
}

Setting toggle(std::string key, std::string flag, bool reloadable, bool DaemonOptions::*field) {
  return {key, flag, reloadable, true,
          [field](DaemonOptions& o, const std::string& v, const std::string& w) { o.*field = parse_bool(v, w); },
          [field](const DaemonOptions& o) { return std::string(o.*field ? "true" : "false"); }};
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> t;
    t.push_back(text("listen", "--listen", &DaemonOptions::listen));
    t.push_back(text("port_file", "--port-file", &DaemonOptions::port_file));
    t.push_back({"port_fd", "--port-fd", false, false,
                 [](DaemonOptions& o, const std::string& v, const std::string& w) {
                   if (v.empty()) {
                     o.port_fd = -1;
                     return;
                   }
                   const auto fd = parse_number<std::int32_t>(v, w);
                   if (fd < 3) throw OptionsError(w + ": " + v + " is stdin, stdout or stderr; give an inherited descriptor >= 3");
                   o.port_fd = fd;
                 },
                 [](const DaemonOptions& o) { return o.port_fd < 0 ? std::string() : std::to_string(o.port_fd); }});
    t.push_back({"port_range", "--port-range", false, false,
                 [](DaemonOptions& o, const std::string& v, const std::string& w) {
                   if (v.empty()) {  // no range: listen on exactly the given port
                     o.port_range.reset();
                     return;
                   }
                   o.port_range = parse_port_range(v);
                   if (!o.port_range) throw OptionsError(w + ": '" + v + "' is not LO-HI with 1 <= LO <= HI <= 65535");
                 },
                 [](const DaemonOptions& o) {
                   return o.port_range ? std::to_string(o.port_range->lo) + "-" + std::to_string(o.port_range->hi)
                                       : std::string();
                 }});
    t.push_back(number("port_probes", "--port-probes", false, &DaemonOptions::port_probes));
    t.push_back({"mode", "--mode", false, false,
                 [](DaemonOptions& o, const std::string& v, const std::string& w) {
                   if (v == "step") o.mode = core::Mode::step;
                   else if (v == "site") o.mode = core::Mode::site;
                   else throw OptionsError(w + ": '" + v + "' is not step or site");
                 },
                 [](const DaemonOptions& o) { return std::string(core::mode_name(o.mode)); }});
    t.push_back(text("rdzv_id", "--rdzv-id", &DaemonOptions::rdzv_id));
    t.push_back({"participants", "--participants", false, false,
                 [](DaemonOptions& o, const std::string& v, const std::string& w) {
                   if (v.empty()) {
                     o.participants.reset();
                     return;
                   }
                   const auto colon = v.find(':');
                   core::ParticipantRange range;
                   range.min = parse_number<std::int32_t>(v.substr(0, colon), w);
                   range.max = colon == std::string::npos ? range.min : parse_number<std::int32_t>(v.substr(colon + 1), w);
                   if (range.min < 1 || range.max < range.min) {
                     throw OptionsError(w + ": '" + v + "' is not N or MIN:MAX with 1 <= MIN <= MAX");
                   }
                   o.participants = range;
                 },
                 [](const DaemonOptions& o) {
                   return o.participants ? std::to_string(o.participants->min) + ":" + std::to_string(o.participants->max)
                                         : std::string();
                 }});
    t.push_back(text("token_file", "--token-file", &DaemonOptions::token_file));
    t.push_back(text("site_secret_file", "--site-secret-file", &DaemonOptions::site_secret_file));
    t.push_back(toggle("exit_with_parent", "--exit-with-parent", false, &DaemonOptions::exit_with_parent));
    t.push_back(number("idle_timeout_s", "--idle-timeout", true, &DaemonOptions::idle_timeout_s));
    t.push_back(millis("heartbeat_interval_ms", "--heartbeat-interval", &core::CoreSettings::heartbeat_interval));
    t.push_back(millis("heartbeat_timeout_ms", "--heartbeat-timeout", &core::CoreSettings::heartbeat_timeout));
    t.push_back(millis("last_call_ms", "--last-call", &core::CoreSettings::last_call));
    t.push_back(millis("join_timeout_ms", "--join-timeout", &core::CoreSettings::join_timeout));
    t.push_back(millis("wait_timeout_ms", "--wait-timeout", &core::CoreSettings::wait_timeout));
    t.push_back(millis("rendezvous_idle_timeout_ms", "--rendezvous-idle-timeout",
                       &core::CoreSettings::rendezvous_idle_timeout));
    t.push_back({"log_level", "--log-level", true, false,
                 [](DaemonOptions& o, const std::string& v, const std::string& w) { o.log_level = parse_log_level(v, w); },
                 [](const DaemonOptions& o) { return std::string(log_level_name(o.log_level)); }});
    t.push_back(toggle("syslog", "--syslog", false, &DaemonOptions::syslog));
    t.push_back(number("max_message_bytes", "--max-message-bytes", false, &DaemonOptions::max_message_bytes));
    t.push_back(number("max_unauthenticated_per_peer", "--max-unauthenticated-per-peer", false,
                       &DaemonOptions::max_unauthenticated_per_peer));
    t.push_back({"metrics_listen", "--metrics-listen", false, false,
                 [](DaemonOptions& o, const std::string& v, const std::string& w) {
                   if (!v.empty() && !parse_host_port(v, 0))
                     throw OptionsError(w + ": '" + v + "' is not HOST:PORT with PORT in 0..65535 (empty: no /metrics)");
                   o.metrics_listen = v;
                 },
                 [](const DaemonOptions& o) { return o.metrics_listen; }});
    t.push_back(toggle("metrics_expose_ids", "--metrics-expose-ids", true, &DaemonOptions::metrics_expose_ids));
    t.push_back(limit("max_rendezvous", &core::Limits::max_rendezvous));
    t.push_back(limit("max_rendezvous_per_user", &core::Limits::max_rendezvous_per_user));
    t.push_back(limit("max_participants", &core::Limits::max_participants));
    t.push_back(limit("max_keys", &core::Limits::max_keys));
    t.push_back(limit("max_key_length", &core::Limits::max_key_length));
    t.push_back(limit("max_value_size", &core::Limits::max_value_size));
    t.push_back(limit("max_bytes", &core::Limits::max_bytes));
    t.push_back(limit("max_bytes_per_user", &core::Limits::max_bytes_per_user));
    t.push_back(limit("max_id_length", &core::Limits::max_id_length));
    t.push_back(limit("max_waiters", &core::Limits::max_waiters));
    t.push_back(limit("max_timeout_ms", &core::Limits::max_timeout_ms));
    t.push_back(limit("max_keys_per_request", &core::Limits::max_keys_per_request));
    t.push_back(limit("max_reply_bytes", &core::Limits::max_reply_bytes));
    return t;
  }();
  return table;
}

const Setting* by_key(const std::string& key) {
  for (const auto& s : settings())
    if (s.key == key) return &s;
  return nullptr;
}

const Setting* by_flag(const std::string& flag) {
  for (const auto& s : settings())
    if (s.flag == flag) return &s;
  return nullptr;
}

constexpr std::size_t kMaxConfigBytes = 1 << 20;

// The config file as one YAML document: read as a regular file (a FIFO or directory is refused,
// not waited on), and every yaml-cpp error turned into an OptionsError naming the file.
YAML::Node load_config(const std::string& path) {
  std::string text;
  try {
    text = read_regular_file(path, kMaxConfigBytes);
  } catch (const std::runtime_error& e) {
    throw OptionsError(std::string("--config: ") + e.what());
  }
  try {
    return load_yaml_document(text);
  } catch (const YamlDocumentError& e) {
    throw OptionsError(path + ": " + e.what());
  }
}

void apply_yaml(DaemonOptions& options, const std::string& path) {
  const YAML::Node root = load_config(path);
  if (root.IsNull()) return;  // an empty file: all defaults
  if (!root.IsMap()) throw OptionsError(path + ": the top level must be a mapping of key: value");
  std::set<std::string> seen;
  const std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& map,
                                                                             const std::string& prefix) {
    for (const auto& item : map) {
      if (!item.first.IsScalar()) {
        throw OptionsError(path + ": a key " + (prefix.empty() ? "at the top level" : "under 'limits'") + " is not a plain name");
      }
      const std::string key = prefix + item.first.Scalar();
      const std::string where = path + ": key '" + key + "'";
      if (!seen.insert(key).second) throw OptionsError(where + " appears twice");
      if (key == "limits") {
        if (!item.second.IsMap() && !item.second.IsNull()) throw OptionsError(where + ": expected a mapping of limit: value");
        if (item.second.IsMap()) walk(item.second, "limits.");
        continue;
      }
      const Setting* setting = by_key(key);
      if (!setting) throw OptionsError(path + ": unknown key '" + key + "' (see etc/rdzvd.yaml)");
      if (item.second.IsNull()) continue;  // "key:" with no value keeps the default
      if (!item.second.IsScalar()) throw OptionsError(where + ": expected a single value");
      setting->set(options, item.second.Scalar(), where);
    }
  };
  walk(root, "");
}

void validate(const DaemonOptions& o) {
  if (o.core.heartbeat_interval >= o.core.heartbeat_timeout)
    throw OptionsError("heartbeat_interval_ms (" + std::to_string(o.core.heartbeat_interval.count()) +
                       ") must be below heartbeat_timeout_ms (" + std::to_string(o.core.heartbeat_timeout.count()) + ")");
  if (o.port_probes == 0) throw OptionsError("port_probes: must be at least 1");
  // gRPC takes an int; a value must also fit in one message with its key.
  constexpr std::uint64_t kMessageMax = std::numeric_limits<int>::max();
  if (o.max_message_bytes < 4096 || o.max_message_bytes > kMessageMax)
    throw OptionsError("max_message_bytes: " + std::to_string(o.max_message_bytes) + " is outside 4096.." +
                       std::to_string(kMessageMax));
  if (o.max_message_bytes <= o.core.limits.max_value_size)
    throw OptionsError("max_message_bytes (" + std::to_string(o.max_message_bytes) +
                       ") must exceed limits.max_value_size (" + std::to_string(o.core.limits.max_value_size) +
                       "), or no value that size could be sent");
  if (o.core.limits.max_reply_bytes < o.core.limits.max_value_size)
    throw OptionsError("limits.max_reply_bytes (" + std::to_string(o.core.limits.max_reply_bytes) +
                       ") must be at least limits.max_value_size (" + std::to_string(o.core.limits.max_value_size) +
                       "), or a stored value could not be read back");
  // Barrier and QueuePop with timeout_ms 0 take wait_timeout_ms, which must pass the same check
  // as a client's timeout_ms; join_timeout_ms likewise stands in for a Join's.
  for (auto [name, value] : {std::pair{"wait_timeout_ms", o.core.wait_timeout},
                             std::pair{"join_timeout_ms", o.core.join_timeout}}) {
    if (value.count() > std::int64_t(o.core.limits.max_timeout_ms))
      throw OptionsError(std::string(name) + " (" + std::to_string(value.count()) +
                         ") must not exceed limits.max_timeout_ms (" + std::to_string(o.core.limits.max_timeout_ms) + ")");
  }
  if (o.mode == core::Mode::step && o.rdzv_id.empty())
    throw OptionsError("--rdzv-id is required in step mode");
  if (o.mode == core::Mode::site && o.site_secret_file.empty())
    throw OptionsError("--site-secret-file is required in site mode");
  if (o.mode == core::Mode::site && o.participants)
    throw OptionsError("--participants is for step mode (in site mode each Join names its own range)");
  if (o.listen.rfind(':') == std::string::npos) throw OptionsError("--listen: '" + o.listen + "' is not HOST:PORT");
  // Clients walk the probe sequence from their base inside the range and never try a port
  // outside it, so a daemon listening there would not be found.
  if (const auto listen = parse_host_port(o.listen, 0);
      listen && listen->port != 0 && o.port_range && !o.port_range->contains(listen->port))
    throw OptionsError("--listen: port " + std::to_string(listen->port) + " is outside --port-range " +
                       std::to_string(o.port_range->lo) + "-" + std::to_string(o.port_range->hi) +
                       " (give a base port inside the range, or port 0 for an ephemeral one)");
  constexpr std::uint64_t kBytesMax = std::numeric_limits<std::int64_t>::max();
  for (auto [name, value] : {std::pair{"limits.max_bytes", o.core.limits.max_bytes},
                             std::pair{"limits.max_bytes_per_user", o.core.limits.max_bytes_per_user}}) {
    if (value > kBytesMax) throw OptionsError(std::string(name) + ": " + std::to_string(value) + " is above 2^63-1");
  }
  if (o.rdzv_id.size() > o.core.limits.max_id_length)
    throw OptionsError("--rdzv-id: " + std::to_string(o.rdzv_id.size()) + " bytes, longer than limits.max_id_length (" +
                       std::to_string(o.core.limits.max_id_length) + "), so every Join would be refused");
}

std::string read_secret(const std::string& path, const std::string& what) {
  try {
    return read_secret_file(path);
  } catch (const std::runtime_error& e) {
    throw OptionsError(what + ": " + e.what());
  }
}

}  // namespace

core::LogLevel parse_log_level(const std::string& text, const std::string& key) {
  if (text == "error") return core::LogLevel::error;
  if (text == "warn") return core::LogLevel::warn;
  if (text == "info") return core::LogLevel::info;
  if (text == "debug") return core::LogLevel::debug;
  throw OptionsError(key + ": '" + text + "' is not error, warn, info or debug");
}

const char* log_level_name(core::LogLevel level) {
  switch (level) {
    case core::LogLevel::error: return "error";
    case core::LogLevel::warn: return "warn";
    case core::LogLevel::info: return "info";
    case core::LogLevel::debug: return "debug";
  }
  return "info";
}

DaemonOptions parse_options(const std::vector<std::string>& args) {
  DaemonOptions options;
  // The config file goes first so that every flag overrides it, wherever it appears.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config") {
      if (i + 1 >= args.size()) throw OptionsError("--config: missing FILE");
      options.config_file = args[i + 1];
    } else if (args[i].rfind("--config=", 0) == 0) {
      options.config_file = args[i].substr(9);
    }
  }
  if (!options.config_file.empty()) apply_yaml(options, options.config_file);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      continue;
    }
    if (flag == "--config") {
      if (!value) ++i;
      continue;
    }
    const Setting* setting = by_flag(flag);
    if (!setting) throw OptionsError("unknown argument '" + flag + "' (see rdzvd --help)");
    if (setting->is_switch) {
      setting->set(options, value.value_or("true"), flag);
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) throw OptionsError(flag + ": missing value");
      value = args[++i];
    }
    setting->set(options, *value, flag);
  }
  if (!options.help) validate(options);
  return options;
}

void check_startup_only(const DaemonOptions& o) {
  if (o.port_fd >= 0 && ::fcntl(o.port_fd, F_GETFD) == -1)
    throw OptionsError("--port-fd: " + std::to_string(o.port_fd) + " is not an open file descriptor");
}

std::vector<std::string> apply_reload(DaemonOptions& running, const DaemonOptions& reloaded) {
  DaemonOptions merged = running;
  std::vector<std::string> changes;
  for (const auto& setting : settings()) {
    const std::string before = setting.get(merged);
    const std::string after = setting.get(reloaded);
    if (before == after) continue;
    if (!setting.reloadable) {
      changes.push_back(setting.key + ": changed in the file but needs a restart (keeping " + before + ")");
      continue;
    }
    setting.set(merged, after, setting.key);
    changes.push_back(setting.key + ": " + before + " -> " + after);
  }
  // The file was checked as a whole, but the daemon keeps its non-reloadable keys: the mix must
  // hold too (e.g. a larger limits.max_value_size with the max_message_bytes still in force).
  try {
    validate(merged);
  } catch (const OptionsError& e) {
    throw OptionsError(std::string("with the keys that need a restart kept as they run: ") + e.what());
  }
  running = std::move(merged);
  return changes;
}

core::AuthConfig load_auth(const DaemonOptions& options) {
  core::AuthConfig auth;
  auth.mode = options.mode;
  if (options.mode == core::Mode::site) {
    auth.site_secret = read_secret(options.site_secret_file, "--site-secret-file");
    return auth;
  }
  auth.step_rdzv_id = options.rdzv_id;
  if (!options.token_file.empty()) {
    auth.step_token = read_secret(options.token_file, "--token-file");
  } else if (const char* env = std::getenv("LLM_RDZV_TOKEN"); env && *env) {
    auth.step_token = env;
    unsetenv("LLM_RDZV_TOKEN");
  } else {
    throw OptionsError("step mode needs a token: --token-file FILE or LLM_RDZV_TOKEN in the environment");
  }
  return auth;
}

const char* const kUsage = R"(rdzvd - rendezvous daemon for llm-rdzv (gRPC service llmrdzv.v1.Rendezvous)

usage: rdzvd [--config FILE] [flags]

Flags override the YAML file's keys (etc/rdzvd.yaml documents each one and its default).
  --config FILE                YAML config; SIGHUP re-reads it and applies the reloadable keys
  --listen HOST:PORT           address to serve on; port 0 = ephemeral (default 0.0.0.0:0)
  --port-file FILE             write the bound port there (atomically) once listening
  --port-fd N                  write the bound port to inherited descriptor N, then close it
  --port-range LO-HI           with --listen HOST:BASE (BASE in LO-HI), try BASE, then the
  --port-probes N                step-port probe sequence in LO-HI, N candidates in all (default 8)
  --mode step|site             step: one rendezvous, one token; site: HMAC site tokens
  --rdzv-id ID                 (step) the rendezvous this daemon serves
  --participants MIN:MAX       (step) its participant range; Joins asking for another are refused
  --token-file FILE            (step) its token; else env LLM_RDZV_TOKEN (not on the command line)
  --site-secret-file FILE      (site) the secret site tokens are HMACs under
  --exit-with-parent           exit when the parent process dies (or is already gone)
  --idle-timeout SECONDS       exit after that long without rendezvous activity: no call, no
                               waiting joiner or blocked call, no session (0 = never)
  --heartbeat-interval MS      session heartbeat period told to clients (default 1000)
  --heartbeat-timeout MS       silence after which a member is dead (default 10000)
  --last-call MS               elastic rounds: wait after min joined (default 3000)
  --join-timeout MS            Join with no timeout of its own (default 600000)
  --wait-timeout MS            Barrier / blocking QueuePop with no timeout (default 300000);
                               both at most --max-timeout-ms
  --rendezvous-idle-timeout MS collect a rendezvous untouched this long (default 3600000)
  --max-rendezvous N, --max-rendezvous-per-user N, --max-participants N, --max-keys N, --max-key-length N,
  --max-value-size N, --max-bytes N, --max-bytes-per-user N, --max-id-length N, --max-waiters N,
  --max-timeout-ms N, --max-keys-per-request N, --max-reply-bytes N     limits (see etc/rdzvd.yaml)
  --max-message-bytes N        largest gRPC message accepted (default 17825792)
  --max-unauthenticated-per-peer N   connections one uid on this node or one other node may hold
                               open before they say Hello with the token; past it its oldest is
                               shut down (default 256; root and rdzvd's own uid unbounded; 0: off)
  --metrics-listen HOST:PORT   serve Prometheus metrics over HTTP at /metrics there (default: off)
  --metrics-expose-ids         add per-rendezvous series labelled rdzv_id (and uid in site mode)
  --log-level error|warn|info|debug   (default info)
  --syslog                     log to syslog (daemon facility) instead of stderr
  --help                       this text

Signals: SIGTERM/SIGINT stop gracefully (sessions get SHUTDOWN, blocked calls UNAVAILABLE, exit 0);
SIGUSR1 stops it once no member remains (slurmstepd sends it when the step's first node is done),
and fails the joiners of fixed-size rendezvous at once with ABORTED;
SIGHUP reloads the config file. Bad flags or config: a message naming the key, exit status 2.
)";

}  // namespace llmrdzv::server
