// A call at the moment backward reaches a tensor: what lets a sharding engine gather a block's
// parameters again just before the block's backward (UnitHooks::before_backward). LibTorch C++
// has no module hooks, so the model threads each block's output through this identity.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace llmrdzv::model::detail {

// x itself in forward (a view sharing its data); in backward, `call()` runs when x's whole gradient
// arrives, before the gradient flows on into the graph that made x. Without a gradient to come
// (grad mode off, or x not requiring one) x is returned and nothing is called.
at::Tensor before_backward(const at::Tensor& x, std::function<void()> call);

}  // namespace llmrdzv::model::detail
