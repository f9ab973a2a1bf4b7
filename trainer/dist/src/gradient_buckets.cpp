// GradientBuckets: bucket layout, the post-accumulate-grad hooks, ordered launching of the
// all-reduces and the final wait (see gradient_buckets.hpp).
#include "llmrdzv/dist/gradient_buckets.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <chrono>
#include <stdexcept>

namespace llmrdzv::dist {
namespace {

class ReadyHook final : public torch::autograd::PostAccumulateGradHook {
 public:
  ReadyHook(GradientBuckets& owner, std::size_t index) : owner_(owner), index_(index) {}
  void operator()(const torch::autograd::Variable& tensor) override {
    owner_.on_gradient_ready(index_, tensor.grad());
  }

 private:
  GradientBuckets& owner_;
  std::size_t index_;
};

}  // namespace

GradientBuckets::GradientBuckets(std::vector<at::Tensor> parameters,
                                 c10::intrusive_ptr<c10d::Backend> backend,
                                 std::size_t bucket_cap_bytes, GradientBufferOptions buffer)
    : parameters_(std::move(parameters)), backend_(std::move(backend)), release_(buffer.release_parameter_gradients) {
  if (buffer.type != at::kFloat && buffer.type != at::kBFloat16 && buffer.type != at::kHalf) {
    throw std::invalid_argument("gradient buckets: the buffer must be float32, bfloat16 or float16");
  }
  const std::size_t element_bytes = c10::elementSize(buffer.type);
  if (parameters_.empty()) throw std::invalid_argument("gradient buckets: no parameters");
  slots_.resize(parameters_.size());
  bucket_of_.resize(parameters_.size());
  ready_.assign(parameters_.size(), false);
  folded_.assign(parameters_.size(), false);
  std::int64_t offset = 0;
  for (std::size_t k = parameters_.size(); k-- > 0;) {
    const auto& p = parameters_[k];
    if (p.scalar_type() != at::kFloat && p.scalar_type() != at::kBFloat16 && p.scalar_type() != at::kHalf) {
      throw std::invalid_argument("gradient buckets: parameters must be float32, bfloat16 or float16");
    }
    const std::int64_t numel = p.numel();
    const auto bytes = static_cast<std::size_t>(numel) * element_bytes;
    if (buckets_.empty() ||
        (static_cast<std::size_t>(offset - buckets_.back().begin) * element_bytes + bytes >
             bucket_cap_bytes &&
         !buckets_.back().parameters.empty())) {
      buckets_.push_back(Bucket{.begin = offset, .end = offset});
    }
    slots_[k] = FlatSlot{offset, numel};
    bucket_of_[k] = buckets_.size() - 1;
    buckets_.back().parameters.push_back(k);
    offset += numel;
    buckets_.back().end = offset;
  }
  total_ = offset;
  buffer_options_ = parameters_.front().options().dtype(buffer.type).requires_grad(false);
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    torch::autograd::impl::set_post_acc_grad_hooks(parameters_[k],
                                                   std::make_unique<ReadyHook>(*this, k));
  }
}

GradientBuckets::~GradientBuckets() {
  for (auto& p : parameters_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

ShardLayout ShardLayout::of(std::int64_t total, int world) {
  if (world < 1) throw std::invalid_argument("shard layout: world size " + std::to_string(world));
  return {total, (total + world - 1) / world, world};
}

ShardLayout GradientBuckets::shards() const { return ShardLayout::of(total_, backend_->getSize()); }

void GradientBuckets::ensure_buffer() {
  if (!flat_.defined()) flat_ = at::zeros({total_}, buffer_options_);
}

void GradientBuckets::reduce_to_owners() {
  std::lock_guard lock(mutex_);
  owners_ = shards();
}

void GradientBuckets::begin_micro_step(bool last_micro_step) {
  std::lock_guard lock(mutex_);
  ensure_buffer();
  armed_ = last_micro_step;
  if (last_micro_step) launched_by_hooks_ = 0;
}

void GradientBuckets::set_write_barrier(std::function<void()> barrier) {
  std::lock_guard lock(mutex_);
  write_barrier_ = std::move(barrier);
}

void GradientBuckets::before_write() {
  if (!barrier_due_) return;
  barrier_due_ = false;
  if (write_barrier_) write_barrier_();
}

void GradientBuckets::add_to_flat(std::size_t index, const at::Tensor& grad) {
  before_write();
  auto slice = flat_.narrow(0, slots_[index].offset, slots_[index].numel);
  folded_[index] ? slice.add_(grad.reshape({-1})) : slice.copy_(grad.reshape({-1}));
  folded_[index] = true;
}

void GradientBuckets::on_gradient_ready(std::size_t index, const at::Tensor& grad) {
  std::lock_guard lock(mutex_);
  if (ready_[index]) return;
  ensure_buffer();
  if (!armed_) {  // an earlier micro-step: only a releasing buffer takes the gradient now
    if (release_) {
      add_to_flat(index, grad);
      parameters_[index].mutable_grad().reset();
    }
    return;
  }
  add_to_flat(index, grad);
  if (release_) parameters_[index].mutable_grad().reset();
  ready_[index] = true;
  ++buckets_[bucket_of_[index]].ready;
  const std::size_t before = next_to_launch_;
  launch_ready_in_order();
  launched_by_hooks_ += next_to_launch_ - before;
}

void GradientBuckets::launch_ready_in_order() {
  while (next_to_launch_ < buckets_.size() &&
         buckets_[next_to_launch_].ready == buckets_[next_to_launch_].parameters.size()) {
    launch(buckets_[next_to_launch_++]);
  }
}

void GradientBuckets::launch(Bucket& bucket) {
  auto view = flat_.narrow(0, bucket.begin, bucket.end - bucket.begin);
  const int world = backend_->getSize();
  if (world > 1) view.div_(world);  // reductions sum; dividing first gives the mean
  if (!owners_) {
    std::vector<at::Tensor> tensors{view};
    bucket.work.push_back(backend_->allreduce(tensors));
    return;
  }
  // Each owner's part of the bucket, in rank order (the same order on every rank).
  for (int owner = 0; owner < world; ++owner) {
    const std::int64_t from = std::max(bucket.begin, owners_->begin(owner));
    const std::int64_t to = std::min(bucket.end, owners_->end(owner));
    if (from >= to) continue;
    std::vector<at::Tensor> part{flat_.narrow(0, from, to - from)};
    c10d::ReduceOptions options;
    options.rootRank = owner;
    bucket.work.push_back(backend_->reduce(part, options));
  }
}

void GradientBuckets::finish() {
  std::lock_guard lock(mutex_);
  ensure_buffer();
  // Parameters whose hook did not fire this step: their accumulated gradient, or zero.
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    if (ready_[k]) continue;
    const auto& grad = parameters_[k].grad();
    if (grad.defined()) {
      add_to_flat(k, grad);
    } else if (!folded_[k]) {
      before_write();
      flat_.narrow(0, slots_[k].offset, slots_[k].numel).zero_();
    }
    ready_[k] = true;
    ++buckets_[bucket_of_[k]].ready;
  }
  launch_ready_in_order();
  const auto start = std::chrono::steady_clock::now();
  for (auto& bucket : buckets_) {
    for (auto& work : bucket.work) work->wait();
    bucket.work.clear();
    bucket.ready = 0;
  }
  last_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ready_.assign(ready_.size(), false);
  folded_.assign(folded_.size(), false);
  next_to_launch_ = 0;
  armed_ = false;
  barrier_due_ = true;
}

void GradientBuckets::fold() {
  std::lock_guard lock(mutex_);
  ensure_buffer();
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    at::Tensor& grad = parameters_[k].mutable_grad();
    if (!grad.defined()) continue;
    add_to_flat(k, grad);
    grad.reset();
  }
}

void GradientBuckets::copy_to_grads() { copy_to_grads_of(parameters_); }

void GradientBuckets::copy_to_grads_of(const std::vector<at::Tensor>& tensors) {
  if (owners_) throw std::logic_error("gradient buckets: copy_to_grads after reduce_to_owners (only shards are reduced)");
  if (tensors.size() != parameters_.size()) throw std::logic_error("gradient buckets: copy_to_grads_of needs one tensor per parameter");
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    auto mean = flat_.narrow(0, slots_[k].offset, slots_[k].numel).view(parameters_[k].sizes());
    auto& grad = tensors[k].mutable_grad();
    if (grad.defined()) {
      grad.copy_(mean);
    } else {
      grad = mean.clone();
    }
  }
}

}  // namespace llmrdzv::dist
