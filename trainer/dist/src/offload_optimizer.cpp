// OffloadAdamW: shard layout, the per-step chunked download / fused update / upload and the
// all-gather, and the shard's checkpoint entries (see offload_optimizer.hpp).
#include "llmrdzv/dist/offload_optimizer.hpp"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>

#include "llmrdzv/dist/chunk_pipeline.hpp"
#include "llmrdzv/engine/training_engine.hpp"
#include "offload_copies.hpp"

namespace llmrdzv::dist {
namespace {

at::Tensor host_tensor(std::int64_t n, at::ScalarType type, bool pinned) {
  return at::zeros({n}, at::TensorOptions().dtype(type).pinned_memory(pinned));
}

std::span<float> span_of(const at::Tensor& t, std::int64_t begin, std::int64_t end) {
  return {t.data_ptr<float>() + begin, static_cast<std::size_t>(end - begin)};
}

// The raw bits of a bf16 tensor's elements [begin, end).
std::span<std::uint16_t> bits_of(const at::Tensor& t, std::int64_t begin, std::int64_t end) {
  return {reinterpret_cast<std::uint16_t*>(t.data_ptr<at::BFloat16>()) + begin, static_cast<std::size_t>(end - begin)};
}

}  // namespace

OffloadAdamW::OffloadAdamW(std::vector<OffloadParameter> parameters, std::vector<FlatSlot> slots,
                           c10::intrusive_ptr<c10d::Backend> backend,
                           optim::AdamWHyperparams hyper, optim::KernelOptions kernel,
                           std::int64_t chunk_elements)
    : parameters_(std::move(parameters)),
      slots_(std::move(slots)),
      backend_(std::move(backend)),
      hyper_(hyper),
      kernel_(kernel),
      rank_(backend_->getRank()),
      world_(backend_->getSize()),
      chunk_(chunk_elements) {
  if (parameters_.size() != slots_.size() || parameters_.empty()) {
    throw std::invalid_argument("offload optimizer: one flat slot per parameter needed");
  }
  if (chunk_ <= 0) throw std::invalid_argument("offload optimizer: the chunk size must be positive");
  const auto device = parameters_.front().tensor.device();
  type_ = parameters_.front().tensor.scalar_type();
  if (type_ != at::kFloat && type_ != at::kBFloat16 && type_ != at::kHalf) {
    throw std::invalid_argument("offload optimizer: parameters must be float32, bfloat16 or float16");
  }
  for (const auto& p : parameters_) {
    if (p.tensor.scalar_type() != type_ || p.tensor.device() != device) {
      throw std::invalid_argument("offload optimizer: every parameter must have the same type and device");
    }
  }
  for (const auto& slot : slots_) total_ = std::max(total_, slot.offset + slot.numel);
  const ShardLayout layout = ShardLayout::of(total_, world_);  // GradientBuckets reduces to these
  shard_size_ = layout.size;
  shard_begin_ = layout.begin(rank_);
  const std::int64_t shard_end = layout.end(rank_);
  owned_ = shard_end - shard_begin_;

  copies_ = make_offload_copies(device);
  pinned_ = device.is_cuda();
  const bool pinned = pinned_;
  const bool rounds = type_ != at::kFloat;
  // An fp32 model's weights upload straight from the master weights, which are then pinned.
  master_ = host_tensor(shard_size_, at::kFloat, pinned && !rounds);
  exp_avg_ = host_tensor(shard_size_, at::kFloat, false);
  exp_avg_sq_ = host_tensor(shard_size_, at::kFloat, false);
  const std::int64_t staged = std::min(chunk_, owned_);
  for (auto& buffer : download_) buffer = host_tensor(staged, type_, pinned);
  if (rounds) {
    for (auto& buffer : upload_) buffer = host_tensor(staged, type_, pinned);
    if (!rounds_in_update()) gradient32_ = host_tensor(staged, at::kFloat, false);
  }

  // The flat parameters (padding zero), the parameters made views into them, and the master
  // weights from this rank's part; decay runs over the shard.
  at::NoGradGuard no_grad;
  flat_params_ = at::zeros({shard_size_ * world_}, at::TensorOptions().dtype(type_).device(device));
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    at::Tensor& p = parameters_[k].tensor;
    const at::Tensor view = flat_params_.narrow(0, slots_[k].offset, slots_[k].numel).view(p.sizes());
    view.copy_(p.detach());
    p.set_data(view);
    const std::int64_t begin = std::max(slots_[k].offset, shard_begin_);
    const std::int64_t end = std::min(slots_[k].offset + slots_[k].numel, shard_end);
    if (begin >= end) continue;
    master_.narrow(0, begin - shard_begin_, end - begin)
        .copy_(flat_params_.narrow(0, begin, end - begin).to(at::kCPU).to(at::kFloat));
    runs_.push_back(Run{begin - shard_begin_, end - shard_begin_, parameters_[k].decay});
  }
  std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
  copies_->release_unused_device_memory();  // the parameters' old storage
}

OffloadAdamW::~OffloadAdamW() {
  if (pending_.valid()) pending_.wait();  // the background update uses the buffers and copies
  // Copies may still be in flight (a run unwinding from an error): the device's later work, which
  // may reuse the buffers' memory, comes after them. Nothing to report from a destructor.
  try {
    copies_->end_downloads();
    copies_->order_after_downloads();
    copies_->end_step();
  } catch (...) {
  }
}

OffloadAdamW::PipelineStats OffloadAdamW::last_pipeline_stats() const {
  return {chunk_count(chunk_, owned_), copies_->downloads_landed_before_wait()};
}

void OffloadAdamW::check_gradient(const at::Tensor& flat_grad) const {
  if (flat_grad.scalar_type() != type_ || flat_grad.numel() < total_) {
    throw std::invalid_argument("offload optimizer: the flat gradient must hold every parameter's gradient in their type");
  }
}

void OffloadAdamW::refuse_if_pending(const char* what) const {
  if (pending_.valid()) {
    throw std::logic_error(std::string("offload optimizer: ") + what + " while a delayed update is pending (complete_update() first)");
  }
}

void OffloadAdamW::step(const at::Tensor& flat_grad, double learning_rate, double grad_scale) {
  check_gradient(flat_grad);
  complete_update();
  ++step_;
  const auto range = [&](std::int64_t chunk) { return chunk_range(chunk, chunk_, owned_); };
  copies_->begin_downloads();
  copies_->begin_uploads();
  run_chunk_pipeline(
      chunk_count(chunk_, owned_),
      {.start_download =
           [&](std::int64_t chunk, int buffer) {
             const ChunkRange r = range(chunk);
             copies_->start_download(flat_grad.narrow(0, shard_begin_ + r.begin, r.size()),
                                     download_[buffer].narrow(0, 0, r.size()));
             copies_->mark_downloads(static_cast<std::size_t>(buffer));
           },
       .wait_download = [&](int buffer) { copies_->wait_downloads(static_cast<std::size_t>(buffer)); },
       .update =
           [&](std::int64_t chunk, int buffer) {
             const ChunkRange r = range(chunk);
             if (!rounds_in_update()) {
               return update_range(r.begin, r.end, download_[buffer], learning_rate, grad_scale, kernel_);
             }
             copies_->wait_uploads(static_cast<std::size_t>(buffer));  // its previous chunk has left: the update rounds into it
             update_range(r.begin, r.end, download_[buffer], learning_rate, grad_scale, kernel_, upload_[buffer]);
           },
       .start_upload =
           [&](std::int64_t chunk, int buffer) {
             const ChunkRange r = range(chunk);
             start_upload(r.begin, r.end, buffer);
           }});
  copies_->end_step();
  all_gather();
}

void OffloadAdamW::step_delayed(const at::Tensor& flat_grad, double learning_rate, const at::Tensor& grad_scale) {
  check_gradient(flat_grad);
  auto scale = std::make_shared<engine::HostRead>(grad_scale);  // before the copies: it was computed first
  if (!delayed_.defined()) {
    delayed_ = host_tensor(owned_, type_, pinned_);
    arrived_ = at::empty({owned_}, flat_params_.options());
  }
  const bool applying = pending_.valid();
  if (applying) pending_.get();  // rethrows what the update threw
  copies_->begin_downloads();  // after the step's gradient, not after the update's copies below
  if (applying) {
    apply_arrived();
  } else {
    last_gather_wait_seconds_ = 0;
  }
  copies_->begin_uploads();  // after the device's copy out of arrived_, which the next uploads overwrite
  // The gradient comes down part by part; the device's next forward does not wait for it. A 16-bit
  // part lands where the last update's rounded weights went up from.
  const std::vector<ChunkRange> parts = delayed_parts();
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (type_ != at::kFloat) copies_->order_downloads_after_uploads(p);
    copies_->start_download(flat_grad.narrow(0, shard_begin_ + parts[p].begin, parts[p].size()),
                            delayed_.narrow(0, parts[p].begin, parts[p].size()));
    copies_->mark_downloads(p);
  }
  copies_->end_downloads();
  ++step_;
  try {
    pending_ = std::async(std::launch::async, [this, parts, learning_rate, scale] { update_delayed(parts, learning_rate, *scale); });
  } catch (...) {
    --step_;  // no thread, no update
    throw;
  }
}

void OffloadAdamW::before_gradient_write() { copies_->order_after_downloads(); }

std::vector<ChunkRange> OffloadAdamW::delayed_parts() const {
  // Chunks, at most kMostParts of them: each part costs two events per step.
  constexpr std::int64_t kMostParts = 64;
  const std::int64_t size = std::max(chunk_, (owned_ + kMostParts - 1) / kMostParts);
  std::vector<ChunkRange> parts;
  for (std::int64_t c = 0, count = chunk_count(size, owned_); c < count; ++c) parts.push_back(chunk_range(c, size, owned_));
  return parts;
}

void OffloadAdamW::update_delayed(const std::vector<ChunkRange>& parts, double learning_rate, engine::HostRead& scale) {
  // One core fewer than step()'s: the thread that drives the device's next forward and backward
  // keeps one.
  optim::KernelOptions kernel = kernel_;
  if (kernel.threads == 0) kernel.threads = std::max(1U, std::thread::hardware_concurrency());
  if (kernel.threads > 1) --kernel.threads;
  // 16-bit weights go up rounded in place of their gradient, fp32 ones from the masters.
  const bool rounds = type_ != at::kFloat;
  const at::Tensor source = rounds ? delayed_ : master_.narrow(0, 0, owned_);
  const double grad_scale = scale.value();
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const ChunkRange part = parts[p];
    copies_->wait_downloads(p);
    copies_->wait_uploads(p);  // fp32: the last update's weights have left these masters
    // In chunks: fp16's widened gradient has room for one.
    for (std::int64_t begin = part.begin; begin < part.end; begin += chunk_) {
      const std::int64_t end = std::min(part.end, begin + chunk_);
      const at::Tensor gradient = delayed_.narrow(0, begin, end - begin);
      if (rounds_in_update()) {
        update_range(begin, end, gradient, learning_rate, grad_scale, kernel, gradient);
      } else {
        update_range(begin, end, gradient, learning_rate, grad_scale, kernel);
        if (rounds) gradient.copy_(master_.narrow(0, begin, end - begin));
      }
    }
    copies_->start_upload(source.narrow(0, part.begin, part.size()), arrived_.narrow(0, part.begin, part.size()));
    copies_->mark_uploads(p);
  }
}

void OffloadAdamW::apply_arrived() {
  copies_->end_step();  // every upload into arrived_
  if (owned_ > 0) flat_params_.narrow(0, shard_begin_, owned_).copy_(arrived_);
  all_gather();
}

void OffloadAdamW::complete_update() {
  if (!pending_.valid()) return;
  pending_.get();
  apply_arrived();
}

void OffloadAdamW::start_upload(std::int64_t begin, std::int64_t end, int buffer) {
  const at::Tensor target = flat_params_.narrow(0, shard_begin_ + begin, end - begin);
  const at::Tensor master = master_.narrow(0, begin, end - begin);
  const auto mark = static_cast<std::size_t>(buffer);
  if (!upload_[buffer].defined()) {
    copies_->start_upload(master, target);
  } else {
    // Its previous chunk has left (bf16: waited for before the update rounded into it).
    if (!rounds_in_update()) copies_->wait_uploads(mark);
    const at::Tensor rounded = upload_[buffer].narrow(0, 0, end - begin);
    if (!rounds_in_update()) rounded.copy_(master);
    copies_->start_upload(rounded, target);
  }
  copies_->mark_uploads(mark);
}

void OffloadAdamW::all_gather() {
  last_gather_wait_seconds_ = 0;
  if (world_ == 1) return;
  at::Tensor own = flat_params_.narrow(0, std::int64_t{rank_} * shard_size_, shard_size_);
  // NCCL gathers in place; Gloo is given its own input.
  at::Tensor input = flat_params_.is_cuda() ? own : own.clone();
  const auto gather_start = std::chrono::steady_clock::now();
  backend_->_allgather_base(flat_params_, input)->wait();
  last_gather_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - gather_start).count();
}

void OffloadAdamW::update_range(std::int64_t begin, std::int64_t end, const at::Tensor& grad,
                                double learning_rate, double grad_scale, const optim::KernelOptions& kernel,
                                const at::Tensor& rounded) {
  at::Tensor gradient = grad.narrow(0, 0, end - begin);
  if (gradient32_.defined()) gradient = gradient32_.narrow(0, 0, end - begin).copy_(gradient);
  // rounded's elements before `written` hold this step's weights; those no run covers (the
  // padding) are copied from the masters.
  std::int64_t written = begin;
  const auto round_masters = [&](std::int64_t from, std::int64_t to) {
    if (from < to) rounded.narrow(0, from - begin, to - from).copy_(master_.narrow(0, from, to - from));
  };
  for (const Run& run : runs_) {
    const std::int64_t from = std::max(begin, run.begin), to = std::min(end, run.end);
    if (from >= to) continue;
    optim::AdamWHyperparams hp = hyper_;
    hp.lr = learning_rate;
    hp.grad_scale = grad_scale;  // applied by the kernel as it reads the gradient
    if (!run.decay) hp.weight_decay = 0;
    if (rounded.defined()) {
      round_masters(written, from);
      optim::adamw_step_bf16({span_of(master_, from, to), bits_of(gradient, from - begin, to - begin),
                              span_of(exp_avg_, from, to), span_of(exp_avg_sq_, from, to),
                              bits_of(rounded, from - begin, to - begin)},
                             hp, step_, kernel);
      written = to;
    } else {
      optim::adamw_step({span_of(master_, from, to), span_of(gradient, from - begin, to - begin),
                         span_of(exp_avg_, from, to), span_of(exp_avg_sq_, from, to)},
                        hp, step_, kernel);
    }
  }
  if (rounded.defined()) round_masters(written, end);
}

std::map<std::string, at::Tensor> OffloadAdamW::state() const {
  refuse_if_pending("state()");
  return {
      {"offload.master", master_.clone()},
      {"offload.exp_avg", exp_avg_.clone()},
      {"offload.exp_avg_sq", exp_avg_sq_.clone()},
      {"offload.step", at::scalar_tensor(step_, at::kLong)},
      {engine::kOffloadShardKeys.layout, at::tensor(std::vector<std::int64_t>{total_, world_, rank_, shard_size_})},
  };
}

void OffloadAdamW::load_state(const std::map<std::string, at::Tensor>& state) {
  refuse_if_pending("load_state()");
  if (state.contains(engine::kOffloadShardKeys.count)) return load_resharded(state);
  const auto entry = [&](const std::string& name) -> const at::Tensor& {
    const auto found = state.find(name);
    if (found == state.end()) {
      throw std::runtime_error("offload optimizer state has no '" + name + "' entry");
    }
    return found->second;
  };
  const auto& layout = entry(engine::kOffloadShardKeys.layout);
  if (layout.scalar_type() != at::kLong || layout.numel() != 4) {
    throw std::runtime_error("offload optimizer state: 'offload.layout' is malformed");
  }
  const auto saved = layout.contiguous();
  const auto* v = saved.data_ptr<std::int64_t>();
  const std::int64_t total = v[0], world = v[1], rank = v[2], shard = v[3];
  if (total != total_) {
    throw std::runtime_error("offload optimizer state is for a model with " + std::to_string(total) +
                             " parameters; this model has " + std::to_string(total_));
  }
  if (world != world_) {
    throw std::runtime_error(
        "offload optimizer state was saved as " + std::to_string(world) +
        " shards (one per rank) but this run has " + std::to_string(world_) +
        " ranks; one rank's file holds only its own shard: give all " + std::to_string(world) +
        " shards (\"offload.shards\") to reshard them");
  }
  if (rank != rank_ || shard != shard_size_) {
    throw std::runtime_error("offload optimizer state belongs to rank " + std::to_string(rank) +
                             ", not rank " + std::to_string(rank_));
  }
  for (auto [name, target] : {std::pair{"offload.master", &master_}, {"offload.exp_avg", &exp_avg_},
                              {"offload.exp_avg_sq", &exp_avg_sq_}}) {
    const auto& t = entry(name);
    if (t.scalar_type() != at::kFloat || t.numel() != shard_size_) {
      throw std::runtime_error(std::string("offload optimizer state: '") + name + "' should hold " +
                               std::to_string(shard_size_) + " float32 values");
    }
    target->copy_(t.reshape({-1}));
  }
  const auto& step = entry("offload.step");
  if (step.numel() != 1 || step.scalar_type() != at::kLong || step.item<std::int64_t>() < 0) {
    throw std::runtime_error("offload optimizer state: 'offload.step' is malformed");
  }
  step_ = step.item<std::int64_t>();
}

void OffloadAdamW::load_resharded(const std::map<std::string, at::Tensor>& state) {
  const auto entry = [&](const std::string& name) -> const at::Tensor& {
    const auto found = state.find(name);
    if (found == state.end()) throw std::runtime_error("offload optimizer state has no '" + name + "' entry");
    return found->second;
  };
  const at::Tensor& count = entry(engine::kOffloadShardKeys.count);
  if (count.numel() != 1 || count.scalar_type() != at::kLong || count.item<std::int64_t>() < 1) {
    throw std::runtime_error("offload optimizer state: 'offload.shards' is malformed");
  }
  const std::int64_t old_world = count.item<std::int64_t>();
  const std::int64_t old_shard = (total_ + old_world - 1) / old_world;
  const std::int64_t begin = shard_begin_;
  const std::int64_t end = std::min(total_, shard_begin_ + shard_size_);
  std::optional<std::int64_t> steps;
  master_.zero_();
  exp_avg_.zero_();
  exp_avg_sq_.zero_();
  for (std::int64_t k = 0; k < old_world; ++k) {
    const std::string prefix = "shard." + std::to_string(k) + "/";
    const auto layout = entry(prefix + engine::kOffloadShardKeys.layout).contiguous();
    if (layout.scalar_type() != at::kLong || layout.numel() != 4) {
      throw std::runtime_error("offload optimizer state: '" + prefix + "offload.layout' is malformed");
    }
    const auto* v = layout.data_ptr<std::int64_t>();
    if (v[0] != total_) {
      throw std::runtime_error("offload optimizer state is for a model with " + std::to_string(v[0]) +
                               " parameters; this model has " + std::to_string(total_));
    }
    if (v[1] != old_world || v[2] != k || v[3] != old_shard) {
      throw std::runtime_error("offload optimizer shard " + std::to_string(k) + " of " + std::to_string(old_world) +
                               " says it is shard " + std::to_string(v[2]) + " of " + std::to_string(v[1]));
    }
    const auto& step = entry(prefix + "offload.step");
    if (step.numel() != 1 || step.scalar_type() != at::kLong) {
      throw std::runtime_error("offload optimizer state: '" + prefix + "offload.step' is malformed");
    }
    if (steps && *steps != step.item<std::int64_t>()) {
      throw std::runtime_error("offload optimizer shards were saved at different steps (" + std::to_string(*steps) +
                               " and " + std::to_string(step.item<std::int64_t>()) + ")");
    }
    steps = step.item<std::int64_t>();
    // The part of old shard k [k * old_shard, ...) that falls into this rank's new shard.
    const std::int64_t from = std::max(begin, k * old_shard);
    const std::int64_t to = std::min(end, std::min(total_, (k + 1) * old_shard));
    for (auto [name, target] : {std::pair{"offload.master", &master_}, {"offload.exp_avg", &exp_avg_},
                                {"offload.exp_avg_sq", &exp_avg_sq_}}) {
      const auto& t = entry(prefix + name);
      if (t.scalar_type() != at::kFloat || t.numel() != old_shard) {
        throw std::runtime_error("offload optimizer state: '" + prefix + name + "' should hold " +
                                 std::to_string(old_shard) + " float32 values");
      }
      if (from < to) {
        target->narrow(0, from - begin, to - from).copy_(t.reshape({-1}).narrow(0, from - k * old_shard, to - from));
      }
    }
  }
  if (*steps < 0) throw std::runtime_error("offload optimizer state: 'offload.step' is malformed");
  step_ = *steps;
}

std::size_t OffloadAdamW::state_bytes() const {
  std::size_t bytes = master_.nbytes() + exp_avg_.nbytes() + exp_avg_sq_.nbytes();
  for (const auto* buffers : {&download_, &upload_}) {
    for (const at::Tensor& buffer : *buffers) bytes += buffer.defined() ? buffer.nbytes() : 0;
  }
  for (const at::Tensor* buffer : {&gradient32_, &delayed_}) bytes += buffer->defined() ? buffer->nbytes() : 0;
  return bytes;
}

}  // namespace llmrdzv::dist
