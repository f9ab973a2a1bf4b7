// before_backward as a tensor hook: autograd runs a non-leaf tensor's hooks once its whole
// gradient has been summed and before the node that made the tensor runs.
#include "backward_trigger.hpp"

#include <ATen/core/grad_mode.h>

#include <utility>

namespace llmrdzv::model::detail {

at::Tensor before_backward(const at::Tensor& x, std::function<void()> call) {
  if (!at::GradMode::is_enabled() || !x.requires_grad()) return x;
  at::Tensor y = x.view_as(x);  // a tensor of its own, so a hook on x elsewhere is not disturbed
  y.register_hook([call = std::move(call)](const at::Tensor&) { call(); });
  return y;
}

}  // namespace llmrdzv::model::detail
