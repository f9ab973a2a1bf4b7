// sbatch and salloc (see contexts.hpp): a bad #SBATCH --llm-rdzv fails at submit, not in the
// job's first step.
#include "contexts.hpp"
#include "plugin_state.hpp"
#include "step_settings.hpp"

namespace llmrdzv::spank {

void check_allocation() { resolve_step_settings(state().site, state().user, kernel_ephemeral_ports()); }

}  // namespace llmrdzv::spank
