// The SPANK entry points of llm_rdzv.so: a thin dispatch to the work of each context
// (contexts.hpp, one file per context). No exception leaves this file: every failure becomes
// "llm-rdzv: ..." and a -1 return; in slurmstepd the failure instead fails the node's tasks,
// printing the reason on their stderr.
#include <string>
#include <string_view>
#include <vector>

#include "contexts.hpp"
#include "plugin_state.hpp"

// spank.h declares the entry points without C linkage guards. SPANK_PLUGIN's const arrays would
// get internal linkage in C++, so the loader's symbols are spelled out with `extern`.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
extern const char plugin_name[] = "llm_rdzv";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace llmrdzv::spank {
namespace {

// sbatch and salloc hand a bare --llm-rdzv to the job's steps as the text "(null)" (measured:
// SLURM_SPANK__SLURM_SPANK_OPTION_llm_rdzv_llm_rdzv=(null)); it means "no argument".
constexpr std::string_view kAllocatorNoArgument = "(null)";

int on_option(int, const char* optarg, int) {
  return guarded([&] {
    if (optarg != nullptr && optarg == kAllocatorNoArgument) optarg = nullptr;
    state().user = parse_user_options(optarg);
    state().option_given = true;
    return 0;
  });
}

char option_name[] = "llm-rdzv";
char option_arginfo[] = "ARGS";

}  // namespace
}  // namespace llmrdzv::spank

using namespace llmrdzv::spank;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  const spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_REMOTE && context != S_CTX_ALLOCATOR) return 0;
  return guarded([&] {
    try {
      state().site = parse_site_config(std::vector<std::string>(av, av + ac), LLMRDZV_DEFAULT_RDZVD,
                                       kernel_ephemeral_ports());
    } catch (const ArgError& e) {
      throw ArgError(std::string("plugstack.conf: ") + e.what());
    }
    static std::string usage = user_option_usage();
    static spank_option option = {option_name, option_arginfo, usage.data(), 2, 0, on_option};
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) throw ArgError("cannot register --llm-rdzv");
    return 0;
  });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  PluginState& s = state();
  s.active = (s.option_given || s.site.default_on) && s.user.enabled;
  if (!s.active) return 0;
  return guarded([&] {
    switch (spank_context()) {
      case S_CTX_ALLOCATOR:
        check_allocation();
        return 0;
      case S_CTX_LOCAL:
        prepare_local();
        return 0;
      case S_CTX_REMOTE:
        // Failing init here would only fail this node's launch, and srun may still exit 0
        // (measured); failing every local task instead makes the step fail visibly, with the
        // reason on the tasks' stderr.
        try {
          prepare_remote(sp);
        } catch (const std::exception& e) {
          s.task_error = e.what();
          slurm_error("llm-rdzv: %s", e.what());
        }
        return 0;
      default:
        return 0;
    }
  });
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) { return init_task(sp); }

extern "C" int slurm_spank_task_exit(spank_t, int, char**) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return guarded([] {
    task_exited();
    return 0;
  });
}

extern "C" int slurm_spank_exit(spank_t, int, char**) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return guarded([] {
    finish_remote();
    return 0;
  });
}
