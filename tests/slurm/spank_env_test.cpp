// The env contract the plugin gives every task, computed from a step layout (no Slurm needed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "llmrdzv/common/port_probe.hpp"
#include "step_env.hpp"

using namespace llmrdzv;
using namespace llmrdzv::spank;

namespace {

std::map<std::string, std::string> as_map(const EnvList& env) {
  std::map<std::string, std::string> map;
  for (const auto& [name, value] : env) map[name] = value;
  return map;
}

StepSettings settings_with(PortRange ports) {
  StepSettings settings;
  settings.ports = ports;
  settings.timeout_s = 120;
  return settings;
}

}  // namespace

TEST_CASE("step mode env follows the step layout") {
  const StepSettings settings = settings_with({20000, 20999});
  StepLayout layout{.job_id = 42, .step_id = 3, .nnodes = 3, .node_id = 1, .ntasks = 6, .local_tasks = 2};
  const StepPorts ports{20417, 20088};
  const auto env = as_map(step_env(settings, layout, ports, "node1", "", "tok"));
  CHECK(env.at("MASTER_ADDR") == "node1");
  CHECK(env.at("MASTER_PORT") == std::to_string(ports.master));
  CHECK(env.at("RDZV_ENDPOINT") == "node1:" + std::to_string(ports.rdzvd));
  CHECK(env.at("RDZV_ID") == "42.3");
  CHECK(env.at("RDZV_TOKEN") == "tok");
  CHECK(env.at("WORLD_SIZE") == "6");
  CHECK(env.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(env.at("NODE_RANK") == "1");
  CHECK(env.at("GROUP_RANK") == "1");
  CHECK(env.at("NNODES") == "3");
  CHECK(env.at("LLM_RDZV_PORT_RANGE") == "20000-20999");
  CHECK(env.at("LLM_RDZV_MIN_WORLD") == "6");
  CHECK(env.at("LLM_RDZV_MAX_WORLD") == "6");
  CHECK(env.at("LLM_RDZV_TIMEOUT") == "120");
  CHECK(env.at("LLM_RDZV_PORT_PROBES") == "8");
  CHECK(env.size() == 15);

  const auto task = as_map(task_env(5, 1));
  CHECK(task.at("RANK") == "5");
  CHECK(task.at("LOCAL_RANK") == "1");
}

// Whether rdzvd, walking `probes` ports of `range` from its base (as port_probe.hpp's sequence
// goes), would try the step's MASTER_PORT.
bool rdzvd_walks_onto_master(const PortRange& range, std::uint32_t probes, const StepPorts& ports) {
  for (std::uint32_t attempt = 0; attempt < probes; ++attempt) {
    if (probe_port(range, ports.rdzvd, attempt) == ports.master) return true;
  }
  return false;
}

TEST_CASE("srun's random ports are two ports of the range spread over all of it with MASTER_PORT past rdzvd's probes") {
  const PortRange range{20000, 20999};
  std::set<std::uint16_t> rdzvd, master;
  std::uint64_t state = 88172645463325252ULL;
  for (int i = 0; i < 2000; ++i) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;  // xorshift64: stands in for getrandom
    const StepPorts ports = random_step_ports(range, 8, state);
    REQUIRE(range.contains(ports.rdzvd));
    REQUIRE(range.contains(ports.master));
    REQUIRE_FALSE(rdzvd_walks_onto_master(range, 8, ports));
    rdzvd.insert(ports.rdzvd);
    master.insert(ports.master);
  }
  CHECK(rdzvd.size() > 800);  // of 1000 ports, after 2000 draws (expected ~865)
  CHECK(master.size() > 800);
  // Ranges no wider than the probes: MASTER_PORT is the last port rdzvd would try.
  for (const PortRange small : {PortRange{30000, 30001}, PortRange{30000, 30004}}) {
    CHECK(probe_window(small, 8) == small.size() - 1u);
    for (std::uint64_t r = 0; r < 40; ++r) {
      const StepPorts ports = random_step_ports(small, 8, r);
      REQUIRE(small.contains(ports.master));
      REQUIRE(ports.master == probe_port(small, ports.rdzvd, small.size() - 1));
    }
  }
  CHECK(probe_window(range, 8) == 8);
}

TEST_CASE("the ports srun hands to the nodes round-trip, and bad text is refused") {
  const PortRange range{20000, 20999};
  const StepPorts ports{20417, 20088};
  const StepPorts back = parse_ports_text(ports_text(ports), range);
  CHECK(back.rdzvd == 20417);
  CHECK(back.master == 20088);
  for (const std::string bad : {"", "20417", "20417,20417", "20417,30000", "x,y", "20417,20088,1", "-1,20000"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_ports_text(bad, range), Catch::Contains("are not two different ports in 20000-20999"));
  }
}

TEST_CASE("a step no srun started draws its ports at random: in range, rdzvd's walk clear of MASTER_PORT") {
  for (const PortRange range : {PortRange{20000, 20999}, PortRange{20000, 20003}}) {
    const StepSettings settings = settings_with(range);
    std::set<std::uint16_t> bases;
    for (int draw = 0; draw < 500; ++draw) {
      const StepPorts ports = draw_step_ports(settings.ports, settings.port_probes);
      INFO(draw);
      CHECK(settings.ports.contains(ports.rdzvd));
      CHECK(settings.ports.contains(ports.master));
      CHECK_FALSE(rdzvd_walks_onto_master(range, probe_window(range, settings.port_probes), ports));
      CHECK(ports.rdzvd != ports.master);
      bases.insert(ports.rdzvd);
    }
    // Nothing to compute from job and step ids: 500 draws cover the range (1000 ports: about 394
    // distinct expected; 4 ports: all of them).
    CHECK(bases.size() >= (range.size() > 100 ? 300u : 4u));
  }
}

TEST_CASE("elastic nodes=MIN:MAX become participant bounds") {
  StepSettings settings = settings_with({20000, 20999});
  settings.nodes = NodeBounds{2, 4};
  const StepLayout layout{.job_id = 1, .step_id = 0, .nnodes = 3, .node_id = 0, .ntasks = 12, .local_tasks = 4};
  const WorldBounds bounds = world_bounds(settings, layout);
  CHECK(bounds.min == 8);
  CHECK(bounds.max == 16);
  const auto env = as_map(step_env(settings, layout, StepPorts{20000, 20001}, "n", "", "t"));
  CHECK(env.at("LLM_RDZV_MIN_WORLD") == "8");
  CHECK(env.at("LLM_RDZV_MAX_WORLD") == "16");
}

TEST_CASE("nodes=MIN:MAX must admit the step's node count") {
  StepSettings settings = settings_with({20000, 20999});
  settings.nodes = NodeBounds{5, 8};
  const StepLayout one{.job_id = 1, .step_id = 0, .nnodes = 1, .node_id = 0, .ntasks = 1, .local_tasks = 1};
  CHECK_THROWS_WITH(check_node_bounds(settings, one),
                    "nodes=5:8: the step runs on 1 node, fewer than MIN, so its rendezvous could never form; run it "
                    "on at least 5 nodes (srun -N) or lower MIN");
  settings.nodes = NodeBounds{1, 2};
  const StepLayout three{.job_id = 1, .step_id = 0, .nnodes = 3, .node_id = 0, .ntasks = 3, .local_tasks = 1};
  CHECK_THROWS_WITH(check_node_bounds(settings, three), Catch::Contains("runs on 3 nodes, more than MAX"));
  settings.nodes = NodeBounds{2, 4};
  CHECK_NOTHROW(check_node_bounds(settings, three));
  settings.nodes.reset();
  CHECK_NOTHROW(check_node_bounds(settings, one));
}

TEST_CASE("nodes=MIN:MAX given to sbatch leaves the batch script alone") {
  StepSettings settings = settings_with({20000, 20999});
  settings.nodes = NodeBounds{2, 4};
  // Slurm's batch step, as read_layout gives it: one task on one node.
  const StepLayout script{.job_id = 1, .step_id = 0xfffffffb, .nnodes = 1, .node_id = 0, .ntasks = 1, .local_tasks = 1};
  CHECK_NOTHROW(check_node_bounds(settings, script));
  const WorldBounds bounds = world_bounds(settings, script);
  CHECK(bounds.min == 1);
  CHECK(bounds.max == 1);
}

TEST_CASE("nodes= with tasks spread unevenly: the step's own node count forms its world, elastic bounds are refused") {
  StepSettings settings = settings_with({20000, 20999});
  const StepLayout uneven{.job_id = 1, .step_id = 0, .nnodes = 2, .node_id = 0, .ntasks = 3, .local_tasks = 2};
  settings.nodes = NodeBounds{2, 2};
  CHECK_NOTHROW(check_node_bounds(settings, uneven));
  const WorldBounds bounds = world_bounds(settings, uneven);
  CHECK(bounds.min == 3);
  CHECK(bounds.max == 3);
  settings.nodes = NodeBounds{1, 2};
  CHECK_THROWS_WITH(check_node_bounds(settings, uneven),
                    "nodes=1:2: the step's 3 tasks are not spread evenly over its 2 nodes, and an elastic world counts "
                    "whole nodes of equal size; give every node the same number of tasks (srun --ntasks-per-node)");
  // 4 tasks placed 3 + 1: the count divides, the placement does not (each node sees its own).
  const StepLayout three_of_four{.job_id = 1, .step_id = 0, .nnodes = 2, .node_id = 0, .ntasks = 4, .local_tasks = 3};
  const StepLayout one_of_four{.job_id = 1, .step_id = 0, .nnodes = 2, .node_id = 1, .ntasks = 4, .local_tasks = 1};
  CHECK_THROWS_WITH(check_node_bounds(settings, three_of_four), Catch::Contains("are not spread evenly"));
  CHECK_THROWS_WITH(check_node_bounds(settings, one_of_four), Catch::Contains("are not spread evenly"));
  settings.nodes = NodeBounds{2, 2};
  CHECK(world_bounds(settings, three_of_four).min == 4);
  CHECK(world_bounds(settings, three_of_four).max == 4);
}

TEST_CASE("the contract's variable names cover everything a task gets") {
  const auto names = contract_variables();
  const StepSettings settings = settings_with({20000, 20999});
  const StepLayout layout{.job_id = 2, .step_id = 1, .nnodes = 1, .node_id = 0, .ntasks = 2, .local_tasks = 2};
  EnvList all = step_env(settings, layout, StepPorts{20000, 20001}, "n", "", "t");
  for (auto& kv : task_env(1, 1)) all.push_back(kv);
  REQUIRE(names.size() == all.size());
  for (const auto& [name, value] : all) CHECK(std::find(names.begin(), names.end(), name) != names.end());
  for (const char* name : {"RANK", "WORLD_SIZE", "RDZV_TOKEN", "MASTER_PORT", "LLM_RDZV_MIN_WORLD"}) {
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
}

TEST_CASE("batch and interactive steps get readable ids, and a user id wins") {
  StepSettings settings = settings_with({20000, 20999});
  CHECK(rendezvous_id(settings, 9, 0xfffffffb) == "9.batch");
  CHECK(rendezvous_id(settings, 9, 0xfffffffa) == "9.interactive");
  // A requeued job keeps its id and numbers its steps from 0 again: its rendezvous must not be
  // the earlier run's.
  CHECK(rendezvous_id(settings, 9, 0, 0) == "9.0");
  CHECK(rendezvous_id(settings, 9, 0, 2) == "9.0.r2");
  CHECK(rendezvous_id(settings, 9, 0xfffffffb, 1) == "9.batch.r1");
  CHECK(is_script_step(0xfffffffb));
  CHECK_FALSE(is_script_step(0));
  CHECK(is_extern_step(0xfffffffc));
  settings.id = "span";
  CHECK(rendezvous_id(settings, 9, 0) == "span");
  CHECK(rendezvous_id(settings, 9, 0, 3) == "span");  // a chosen id meets again on purpose
  CHECK(as_map(step_env(settings, {}, StepPorts{20000, 20001}, "n", "", "t")).at("RDZV_ID") == "span");
}

TEST_CASE("site mode points tasks at the site's rdzvd") {
  StepSettings settings = settings_with({20000, 20999});
  settings.mode = Mode::site;
  const auto env = as_map(step_env(settings, {}, StepPorts{20000, 20001}, "node1", "rdzv.site:7000", "v1.1000.ab"));
  CHECK(env.at("RDZV_ENDPOINT") == "rdzv.site:7000");
  CHECK(env.at("LLM_RDZV_PORT_RANGE") == "7000");
  CHECK(env.at("LLM_RDZV_PORT_PROBES") == "1");  // the site server's one port
  CHECK(env.at("MASTER_ADDR") == "node1");
}
