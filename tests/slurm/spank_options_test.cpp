// The plugin's argument handling without Slurm: the user's --llm-rdzv keys, the site's
// plugstack.conf arguments, and how they merge. Every rejected input checks its message.
#include <catch2/catch.hpp>

#include <sstream>

#include "feed_damaged.hpp"
#include "site_config.hpp"
#include "step_settings.hpp"
#include "user_options.hpp"

using namespace llmrdzv;
using namespace llmrdzv::spank;
using Catch::Matchers::Contains;

namespace {
const PortRange kEphemeral{32768, 60999};

SiteConfig site(std::vector<std::string> args) {
  return parse_site_config(args, "/usr/sbin/rdzvd", kEphemeral);
}
}  // namespace

TEST_CASE("a bare --llm-rdzv takes every default") {
  for (const char* arg : {static_cast<const char*>(nullptr), ""}) {
    const UserOptions options = parse_user_options(arg);
    CHECK(options.enabled);
    CHECK_FALSE(options.ports);
    CHECK_FALSE(options.nodes);
    CHECK_FALSE(options.timeout_s);
    CHECK_FALSE(options.addr);
    CHECK_FALSE(options.id);
    CHECK_FALSE(options.mode);
  }
}

TEST_CASE("every user key is parsed") {
  const UserOptions options =
      parse_user_options("port=20000-20099,nodes=2:4,timeout=90,addr=iface:ib0,id=exp-7.a,mode=site");
  REQUIRE(options.ports);
  CHECK(options.ports->lo == 20000);
  CHECK(options.ports->hi == 20099);
  CHECK(options.nodes == NodeBounds{2, 4});
  CHECK(options.timeout_s == 90u);
  CHECK(options.addr == AddrPolicy{AddrPolicy::Kind::iface, "ib0"});
  CHECK(options.id == "exp-7.a");
  CHECK(options.mode == Mode::site);

  CHECK(parse_user_options("nodes=3").nodes == NodeBounds{3, 3});
  CHECK(parse_user_options("port=20001-20002").ports->hi == 20002);
  CHECK(parse_user_options("addr=ip").addr->kind == AddrPolicy::Kind::ip);
  CHECK(parse_user_options("addr=hostname").addr->kind == AddrPolicy::Kind::hostname);
  CHECK_FALSE(parse_user_options("off").enabled);
}

TEST_CASE("bad user arguments name the key and the value") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"bogus=1", "unknown key 'bogus'"},
      {"port", "'port' needs a value"},
      {"port=0", "port: '0' is not a port"},
      {"port=70000", "port: '70000' is not a port"},
      {"port=20100-20000", "port: '20100-20000' is not a port"},
      {"nodes=4:2", "nodes: '4:2' has MIN greater than MAX"},
      {"nodes=0:2", "nodes: '0' is out of range"},
      {"nodes=a:b", "nodes: 'a' is not a whole number"},
      {"timeout=-5", "timeout: '-5' is not a whole number"},
      {"timeout=0", "timeout: '0' is out of range"},
      {"addr=eth0", "addr: 'eth0' is not one of hostname, ip, iface:NAME"},
      {"addr=iface:", "addr: 'iface:' is not one of"},
      {"id=a b", "id: 'a b' may only hold"},
      {"id=", "id: '' must be 1 to 128 characters"},
      {"mode=cloud", "mode: 'cloud' is not one of step, site"},
      {"port=20000,,nodes=2", "empty item at position 12"},
      {"=5", "missing key before '='"},
      {"port=20000", "port: '20000' is a single port; a step needs two, one for rdzvd and one for MASTER_PORT"},
      {"port=1-100", "port: '1-100' reaches below 1024; rdzvd runs as the job's user"},
      {"port=20000-20010,timeout=5,port=20020-20030", "'port' is given twice"},
      {"nodes=2,nodes=3", "'nodes' is given twice"},
  };
  for (const auto& [arg, message] : cases) {
    INFO(arg);
    CHECK_THROWS_WITH(parse_user_options(arg), Contains(message));
  }
}

TEST_CASE("site config defaults and every argument") {
  const SiteConfig defaults = site({});
  CHECK(defaults.rdzvd_path == "/usr/sbin/rdzvd");
  CHECK(defaults.port_range.lo == 29500);
  CHECK(defaults.port_range.hi == 29999);
  CHECK(defaults.mode == Mode::step);
  CHECK_FALSE(defaults.default_on);

  const SiteConfig full = site({"rdzvd=/opt/rdzvd", "port_range=21000-21999", "port_probes=4", "mode=site",
                                "server=rdzv.example:7000", "secret_file=/etc/llm-rdzv/secret", "addr=ip",
                                "timeout=60", "heartbeat_interval=500", "heartbeat_timeout=5000",
                                "last_call=3000", "idle_timeout=600", "start_timeout=2000",
                                "log_dir=/var/log/llm-rdzv", "log_level=debug", "default=on"});
  CHECK(full.rdzvd_path == "/opt/rdzvd");
  CHECK(full.port_range.lo == 21000);
  CHECK(full.port_probes == 4u);
  CHECK(full.mode == Mode::site);
  CHECK(full.server == "rdzv.example:7000");
  CHECK(full.secret_file == "/etc/llm-rdzv/secret");
  CHECK(full.addr.kind == AddrPolicy::Kind::ip);
  CHECK(full.timeout_s == 60u);
  CHECK(full.heartbeat_interval_ms == 500u);
  CHECK(full.heartbeat_timeout_ms == 5000u);
  CHECK(full.last_call_ms == 3000u);
  CHECK(full.idle_timeout_s == 600u);
  CHECK(full.start_timeout_ms == 2000u);
  CHECK(full.log_dir == "/var/log/llm-rdzv");
  CHECK(full.log_level == "debug");
  CHECK(full.default_on);
}

TEST_CASE("bad site arguments fail at load naming the argument") {
  const std::vector<std::pair<std::vector<std::string>, const char*>> cases = {
      {{"colour=blue"}, "unknown plugstack.conf argument 'colour'"},
      {{"port_range"}, "argument 'port_range' is not key=value"},
      {{"port_range=a-b"}, "port_range: 'a-b' is not a port"},
      {{"port_range=30000-40000"}, "port_range: '30000-40000' overlaps the kernel's ephemeral ports 32768-60999"},
      {{"rdzvd=bin/rdzvd"}, "rdzvd: 'bin/rdzvd' is not an absolute path"},
      {{"mode=site"}, "mode=site needs server=HOST:PORT and secret_file=PATH"},
      {{"server=nohost"}, "server: 'nohost' is not HOST:PORT"},
      {{"server=h:99999"}, "server: 'h:99999' is not HOST:PORT with PORT in 1..65535"},
      {{"heartbeat_interval=1000", "heartbeat_timeout=500"}, "heartbeat_timeout must be longer"},
      {{"default=maybe"}, "default: 'maybe' is not on or off"},
      {{"log_level=loud"}, "log_level: 'loud' is not one of"},
      {{"port_probes=0"}, "port_probes: '0' is out of range 1..64"},
      {{"a=1,b=2"}, "argument 'a=1,b=2' is not key=value"},
      {{"port_range=29500"}, "port_range: '29500' is a single port"},
      {{"port_range=500-1500"}, "port_range: '500-1500' reaches below 1024"},
      {{"timeout=60", "timeout=90"}, "'timeout' is given twice"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args.front());
    CHECK_THROWS_WITH(site(args), Contains(message));
  }
}

TEST_CASE("user keys override site defaults") {
  const SiteConfig config = site({"port_range=21000-21999", "addr=ip", "timeout=60"});
  const StepSettings plain = resolve_step_settings(config, parse_user_options(nullptr), kEphemeral);
  CHECK(plain.ports.lo == 21000);
  CHECK(plain.addr.kind == AddrPolicy::Kind::ip);
  CHECK(plain.timeout_s == 60u);
  CHECK(plain.mode == Mode::step);

  const StepSettings custom =
      resolve_step_settings(config, parse_user_options("port=22000-22001,addr=hostname,timeout=9,id=x"), kEphemeral);
  CHECK(custom.ports.lo == 22000);
  CHECK(custom.ports.hi == 22001);
  CHECK(custom.addr.kind == AddrPolicy::Kind::hostname);
  CHECK(custom.timeout_s == 9u);
  CHECK(custom.id == "x");
}

TEST_CASE("user keys a site cannot serve are rejected") {
  const SiteConfig config = site({});
  CHECK_THROWS_WITH(resolve_step_settings(config, parse_user_options("mode=site"), kEphemeral),
                    Contains("mode=site: this site runs no site rdzvd"));
  CHECK_THROWS_WITH(resolve_step_settings(config, parse_user_options("port=40000-40001"), kEphemeral),
                    Contains("port: '40000-40001' overlaps the kernel's ephemeral ports"));
  // A node whose ephemeral ports take in the default range (plugstack.conf names none, so nothing
  // was checked at load): every step that would use it is refused, and told what to change.
  const PortRange wide{1024, 65535};
  CHECK_THROWS_WITH(resolve_step_settings(config, parse_user_options(nullptr), wide),
                    Contains("port_range (the site's): '29500-29999' overlaps the kernel's ephemeral ports 1024-65535"));
  CHECK_NOTHROW(resolve_step_settings(config, parse_user_options("port=1024-1030"), PortRange{2000, 65535}));
}

// Damaged option text (a typo, a pasted line, a hostile --llm-rdzv=...) is refused with ArgError,
// whose message the plugin prints as it is, never with another exception that srun would report
// as a plugin failure; what is accepted then merges with the site's settings or is refused there.
TEST_CASE("damaged --llm-rdzv values and plugstack.conf arguments are refused with ArgError") {
  const SiteConfig config = site({"port_range=21000-21999", "addr=ip", "timeout=60"});
  testing::feed_damaged<ArgError>("--llm-rdzv=", {"port=20000-20099,nodes=2:4,timeout=90,addr=iface:ib0,id=exp-7.a",
                                                  "nodes=3,mode=step,addr=hostname", "off"},
                                  3000, [&](const std::string& text) {
                                    resolve_step_settings(config, parse_user_options(text.c_str()), kEphemeral);
                                  });
  // plugstack.conf: one argument per whitespace-separated word, as Slurm splits the line.
  testing::feed_damaged<ArgError>("plugstack.conf", {"rdzvd=/opt/rdzvd port_range=21000-21999 port_probes=4 addr=ip "
                                                     "timeout=60 heartbeat_interval=500 heartbeat_timeout=5000 "
                                                     "last_call=3000 idle_timeout=600 start_timeout=2000 "
                                                     "log_dir=/var/log/llm-rdzv log_level=debug default=on",
                                                     "mode=site server=rdzv.example:7000 secret_file=/etc/llm-rdzv/secret"},
                                  3000, [&](const std::string& line) {
                                    std::istringstream words(line);
                                    std::vector<std::string> args;
                                    for (std::string word; words >> word;) args.push_back(word);
                                    site(args);
                                  });
}
