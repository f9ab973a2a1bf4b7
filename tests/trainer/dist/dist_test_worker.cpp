// dist-test-worker: one rank of the distributed tests, started by dist_tests with the env
// contract of a real rdzvd (or without it, as the one-process reference). Modes:
//   collectives  Gloo all-reduce, broadcast and all-gather through the RdzvStore; prints results
//   train        a toy model trained through the TrainingEngine seam exactly as the training
//                loop drives it; prints "step <k> loss <x> norm <y>" and a parameter checksum
//   memory       builds OffloadAdamW over <N> parameters and prints the measured RSS growth
//   offload-bits steps OffloadAdamW over odd-sized parameters at each of --chunks (0 = the plain
//                fused AdamW over whole parameters, no offload) and prints hashes of the bits of
//                the parameters, of state(), and of a run resumed from state() halfway; then of
//                a run with delayed updates from step 2 on: the parameters it shows after each
//                step, what they should be (the undelayed run's one step late) and its state()
//   hang         joins, then blocks in an all-reduce (a test kills a peer)
//   deferred-fill  ShardedUnits over parameters without values (ZeRO-3's deferred model) of
//                --dtype, each rank filling different values: prints "rank <r> equal <0|1> peak
//                <bytes> outer <bytes> largest <bytes>": whether every rank ends with rank 0's
//                values (gathered whole) and the most whole-unit bytes alive while filling
//   sharded-gradients  ShardedUnits over two units of fp32 parameters, two micro-batches whose
//                loss differs per rank, the second's backward asked for a graph (autograd then
//                replaces .grad instead of adding into the unit's buffer): prints "rank <r> error
//                <e> seen <bytes> unit0 <bytes> block <bytes>", the largest difference between
//                this rank's shard gradient and the mean over ranks of the gradients computed
//                here on plain tensors, summed over the micro-batches, and the most gradient
//                buffer bytes alive at once
//   offload-overlap  (GPU) steps OffloadAdamW over one parameter of --params floats on cuda:0 in
//                chunks of --chunk through an NCCL group, --steps times, printing per step
//                "step <k> chunks <n> landed <m>": how many gradient downloads had landed (CUDA
//                events) before the host came to update their chunk; first "unused reserved MiB
//                <n>": what the caching allocator holds that no tensor uses, once it is built
//   offload-delayed-order  (GPU) delayed steps of OffloadAdamW over --params values of --dtype
//                (f32 or bf16) on cuda:0: a first update delayed and completed at once, then a
//                delayed step whose gradient is overwritten behind before_gradient_write(), then
//                one applying its update; prints "download ms <a> upload ms <u> queued ms <q> ready
//                ms <b> applied ms <c> fresh <0|1> equal <0|1>": a download and an upload of that
//                size on their own, how long the second step_delayed() took on the host, how long
//                the device's next work waited after it (no update to apply) and after the third
//                (applying the second), whether the device then read the second update's weights,
//                and whether the final weights equal three step()s' from the intact gradients (bit
//                for bit)
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/dist/distributed_engine.hpp"
#include "llmrdzv/dist/offload_optimizer.hpp"
#include "llmrdzv/dist/process_group.hpp"
#include "llmrdzv/dist/rdzv_store.hpp"
#include "llmrdzv/dist/sharded_units.hpp"
#include "llmrdzv/engine/single_process_engine.hpp"
#include "llmrdzv/engine/training_engine.hpp"
#include "llmrdzv/kernel_support/tensor_storage.hpp"

namespace {

using namespace llmrdzv;

struct Args {
  std::string mode;
  engine::Offload offload = engine::Offload::none;
  int steps = 20;
  int global_batch = 16;
  int accumulation = 1;
  std::int64_t bucket_mb = 1;
  std::int64_t params = 0;
  std::int64_t chunk = dist::OffloadAdamW::kDefaultChunkElements;
  std::vector<std::int64_t> chunks;
  std::string dtype = "f32";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mode") a.mode = value;
    else if (flag == "--offload") a.offload = engine::parse_option_name<engine::Offload>(value).value();
    else if (flag == "--steps") a.steps = std::stoi(value);
    else if (flag == "--global-batch") a.global_batch = std::stoi(value);
    else if (flag == "--accumulation") a.accumulation = std::stoi(value);
    else if (flag == "--bucket-mb") a.bucket_mb = std::stoll(value);
    else if (flag == "--params") a.params = std::stoll(value);
    else if (flag == "--chunk") a.chunk = std::stoll(value);
    else if (flag == "--dtype") a.dtype = value;
    else if (flag == "--chunks") {
      std::istringstream list(value);
      for (std::string item; std::getline(list, item, ',');) a.chunks.push_back(std::stoll(item));
    }
    else throw std::invalid_argument("unknown flag " + flag);
  }
  return a;
}

struct Group {
  std::shared_ptr<client::Client> client;
  client::Assignment assignment;
  c10::intrusive_ptr<c10d::Backend> backend;
};

Group join_group(c10::Device device = c10::Device(c10::kCPU)) {
  Group g;
  g.client = std::make_shared<client::Client>(client::Options::from_env());
  g.assignment = g.client->join();
  auto store = c10::make_intrusive<dist::RdzvStore>(g.client, g.assignment.round, "test/",
                                                    std::chrono::seconds(60));
  g.backend = dist::make_process_group(store, g.assignment.rank, g.assignment.world_size,
                                       device, {.gloo_hostname = "127.0.0.1"});
  return g;
}

int run_collectives() {
  Group g = join_group();
  const int rank = g.assignment.rank, world = g.assignment.world_size;
  std::vector<at::Tensor> sum{torch::full({5}, float(rank + 1))};
  g.backend->allreduce(sum)->wait();
  std::vector<at::Tensor> bcast{torch::full({3}, float(100 + rank))};
  g.backend->broadcast(bcast)->wait();
  std::vector<at::Tensor> input{torch::full({2}, float(rank))};
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int r = 0; r < world; ++r) gathered[0].push_back(torch::empty({2}));
  g.backend->allgather(gathered, input)->wait();
  std::cout << "rank " << rank << " world " << world << " allreduce " << sum[0][0].item<float>()
            << " broadcast " << bcast[0][2].item<float>() << " allgather";
  for (const auto& t : gathered[0]) std::cout << ' ' << t[1].item<float>();
  std::cout << std::endl;
  g.client->leave();
  return 0;
}

// A small MLP with decayed weights and undecayed biases/LayerNorm, 2.4 MB of parameters so a
// 1 MB bucket cap gives several buckets.
torch::nn::Sequential toy_model() {
  return torch::nn::Sequential(torch::nn::Linear(32, 512), torch::nn::LayerNorm(std::vector<int64_t>{512}),
                               torch::nn::Tanh(), torch::nn::Linear(512, 512), torch::nn::Tanh(),
                               torch::nn::Linear(512, 512), torch::nn::Tanh(), torch::nn::Linear(512, 8));
}

// Sample i of a fixed synthetic regression task (no RNG, so every rank sees the same data).
std::pair<at::Tensor, at::Tensor> samples(std::int64_t first, std::int64_t count) {
  auto i = torch::arange(first, first + count, torch::kFloat).unsqueeze(1);
  auto x = torch::sin(i * 0.37 + torch::arange(32, torch::kFloat).unsqueeze(0) * 0.71);
  auto y = torch::cos(i * 0.11 + torch::arange(8, torch::kFloat).unsqueeze(0) * 1.3);
  return {x, y};
}

int run_train(const Args& a) {
  engine::EngineOptions options;
  options.offload = a.offload;
  options.ddp_bucket_cap_mb = a.bucket_mb;
  options.offload_chunk_mb = 1;  // the toy model's 2.4 MB: --offload optimizer steps in several chunks
  options.use_cpu = true;
  options.threads = 1;
  at::set_num_threads(1);
  auto engine = dist::rendezvous_env_present() ? dist::make_distributed_engine(options, {.gloo_hostname = "127.0.0.1"})
                                               : engine::make_single_process_engine(options);
  const int rank = engine->rank(), world = engine->world_size();
  torch::manual_seed(1000 + rank);  // different on every rank: attach() must broadcast rank 0's
  auto model = toy_model();
  std::vector<engine::NamedParameter> params;
  for (const auto& item : model->named_parameters()) {
    params.push_back({item.key(), item.value(), item.value().dim() > 1});
  }
  engine->attach(params, {.beta1 = 0.9, .beta2 = 0.99, .epsilon = 1e-8, .weight_decay = 0.1});

  const int per_rank = a.global_batch / world, micro = per_rank / a.accumulation;
  if (micro * a.accumulation * world != a.global_batch) throw std::invalid_argument("batch does not divide");
  for (int step = 1; step <= a.steps; ++step) {
    double loss_sum = 0;
    for (int m = 0; m < a.accumulation; ++m) {
      engine->begin_micro_step(m == a.accumulation - 1);
      // 64 samples seen over and over, so 20 steps visibly fit them.
      const auto [x, y] = samples((std::int64_t(step) * a.global_batch) % 64 + rank * per_rank + m * micro, micro);
      auto loss = torch::mse_loss(model->forward(x), y);
      (loss / a.accumulation).backward();
      loss_sum += loss.item<double>() * micro;
    }
    const double norm = engine->finish_gradients(1.0).value();
    engine->optimizer_step(5e-3 * (step <= 5 ? step / 5.0 : 1.0));
    const auto totals = engine->all_reduce_sum({loss_sum, double(per_rank)});
    if (rank == 0) std::printf("step %d loss %.9g norm %.9g\n", step, totals[0] / totals[1], norm);
  }
  double checksum = 0;
  for (const auto& p : params) checksum += p.tensor.to(torch::kDouble).sum().item<double>();
  std::printf("rank %d checksum %.12g\n", rank, checksum);
  engine->barrier();
  return 0;
}

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

int run_memory(const Args& a) {
  Group g = join_group();
  auto param = torch::randn({a.params});
  {  // Once-per-process costs (thread pools and their arenas, which some torch versions start here) are not state.
    auto small = torch::randn({a.chunk});
    dist::OffloadAdamW warm_up({{small, true}}, {{0, a.chunk}}, g.backend, {}, {}, a.chunk);
  }
  g.backend->barrier()->wait();
  const long before = resident_bytes();
  dist::OffloadAdamW optimizer({{param, true}}, {{0, a.params}}, g.backend, {}, {}, a.chunk);
  const long grown = resident_bytes() - before;
  std::printf("rank %d rss_growth %ld state_bytes %zu\n", g.assignment.rank, grown, optimizer.state_bytes());
  g.backend->barrier()->wait();
  g.client->leave();
  return 0;
}

// Unit 0 of two parameters and one block of two, every parameter decayed (each unit one part of
// the shard); rank r's loss on micro-batch k is the sum over parameters of (p * c)^2 with c
// depending on r, k and the parameter.
int run_sharded_gradients() {
  Group g = join_group();
  const int rank = g.assignment.rank, world = g.assignment.world_size;
  const std::vector<std::pair<std::vector<std::int64_t>, int>> shapes{{{9, 4}, 0}, {{5}, 0}, {{7, 3}, 1}, {{3}, 1}};
  std::vector<engine::NamedParameter> params;
  std::vector<at::Tensor> plain;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const at::Tensor values = (torch::arange(c10::multiply_integers(shapes[i].first), torch::kFloat) * 0.01 + double(i))
                                  .view(shapes[i].first);
    params.push_back({"p" + std::to_string(i), values.clone().requires_grad_(true), true, shapes[i].second});
    plain.push_back(values.clone().requires_grad_(true));
  }
  const auto coefficient = [](const at::Tensor& like, int r, int k, std::size_t i) {
    return torch::arange(like.numel(), torch::kFloat).view(like.sizes()) * 1e-3 + 0.1 * double(i + 1) + 0.01 * r +
           0.001 * k;
  };
  const auto loss = [&](const std::vector<at::Tensor>& ps, int r, int k) {
    at::Tensor total = torch::zeros({});
    for (std::size_t i = 0; i < ps.size(); ++i) total = total + (ps[i] * coefficient(ps[i], r, k, i)).pow(2).sum();
    return total;
  };
  // What the shards must hold: over both micro-batches, the mean over ranks.
  for (int k = 0; k < 2; ++k) {
    for (int r = 0; r < world; ++r) (loss(plain, r, k) / double(world)).backward();
  }

  dist::ShardedUnits units(params, g.backend);
  std::vector<at::Tensor> tensors;
  for (const auto& p : params) tensors.push_back(p.tensor);
  for (int k = 0; k < 2; ++k) {
    units.before_forward(0);
    units.before_forward(1);  // kept gathered through backward: the loss saves the parameters
    const at::Tensor l = loss(tensors, rank, k);
    units.after_forward(0);
    l.backward({}, /*retain_graph=*/false, /*create_graph=*/k == 1);
  }
  units.finish_backward();

  double error = 0;
  const auto& shards = units.shard_parameters();
  for (std::size_t s = 0; s < shards.size(); ++s) {
    std::vector<at::Tensor> members;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].unit == shards[s].unit) members.push_back(plain[i].grad().detach().flatten());
    }
    const at::Tensor flat = torch::cat(members);
    const std::int64_t shard = dist::shard_numel(flat.numel(), world);
    const std::int64_t from = std::min<std::int64_t>(rank * shard, flat.numel());
    const at::Tensor expected = flat.narrow(0, from, shards[s].tensor.numel());
    error = std::max(error, (units.shard_gradients()[s] - expected).abs().max().item<double>());
  }
  const dist::ShardResidency held = units.residency();
  std::printf("rank %d error %g seen %lld unit0 %lld block %lld\n", rank, error,
              static_cast<long long>(held.peak_gradient_bytes), static_cast<long long>(36 + 5) * 4,
              static_cast<long long>(21 + 3) * 4);
  g.backend->barrier()->wait();
  g.client->leave();
  return 0;
}

// Three units of odd sizes, two blocks alike and unit 0 split around them (as a model's embeddings
// and head are), whose parameters have shapes and no bytes; rank r fills parameter i with
// i + 0.001 * k + 100 r.
int run_deferred_fill(const Args& a) {
  Group g = join_group();
  const int rank = g.assignment.rank;
  const at::ScalarType dtype = a.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  const std::vector<std::pair<std::vector<std::int64_t>, int>> shapes{
      {{37, 5}, 0}, {{11}, 0}, {{13, 7}, 1}, {{7}, 1}, {{13, 7}, 2}, {{7}, 2}, {{17, 5}, 0}};
  std::vector<engine::NamedParameter> params;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    at::Tensor p = torch::empty(shapes[i].first).requires_grad_(true);
    kernel_support::release_storage(p);
    params.push_back({"p" + std::to_string(i), p, shapes[i].first.size() > 1, shapes[i].second});
  }
  const auto values_of = [](std::size_t i, const at::Tensor& like, int filler) {
    return (torch::arange(like.numel(), torch::kFloat) * 0.001 + double(i) + 100.0 * filler).view(like.sizes());
  };
  const engine::DeferredValues deferred{
      [&](std::size_t i, const at::Tensor& values) { values.copy_(values_of(i, values, rank)); }, dtype};
  dist::ShardedUnits units(params, g.backend, {}, &deferred);
  const dist::ShardResidency filled = units.residency();
  units.gather_whole();
  bool equal = true;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i].tensor;
    equal = equal && p.scalar_type() == dtype && at::equal(p.detach(), values_of(i, p, 0).to(dtype));
  }
  std::printf("rank %d equal %d peak %lld outer %lld largest %lld\n", rank, int(equal),
              static_cast<long long>(filled.peak_gathered_bytes), static_cast<long long>(filled.outer_unit_bytes),
              static_cast<long long>(filled.largest_unit_bytes));
  g.backend->barrier()->wait();
  g.client->leave();
  return 0;
}

// FNV-1a over the bytes of `tensors`.
std::uint64_t hash_bits(const std::vector<at::Tensor>& tensors) {
  std::uint64_t h = 14695981039346656037ull;
  for (const auto& t : tensors) {
    const auto c = t.contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    for (std::size_t i = 0; i < c.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return h;
}

// The offload-bits problem: parameters whose sizes, decay runs, shard boundaries (at 1, 2 and 3
// ranks) and chunk boundaries do not line up; the same "already averaged" gradient on every rank.
struct BitsProblem {
  static constexpr std::int64_t kSizes[] = {1, 37, 1000, 4097, 13, 2053};
  static constexpr bool kDecay[] = {true, false, true, true, false, true};
  static constexpr int kSteps = 4;
  at::ScalarType dtype;
  std::vector<at::Tensor> params;
  std::vector<dist::FlatSlot> slots;
  std::int64_t total = 0;

  explicit BitsProblem(at::ScalarType type) : dtype(type) {
    for (std::size_t k = 0; k < std::size(kSizes); ++k) {
      params.push_back((torch::sin(torch::arange(kSizes[k], torch::kFloat) * 0.37 + double(k)) * 0.5).to(dtype));
      slots.push_back({total, kSizes[k]});
      total += kSizes[k];
    }
  }
  // In the parameters' type, as the offload optimizer receives it.
  at::Tensor gradient(int step) const {
    return (torch::cos(torch::arange(total, torch::kFloat) * 0.013 + step) * 0.1).to(dtype);
  }
  static double learning_rate(int step) { return 1e-2 * step; }
  static double grad_scale(int step) { return step == 2 ? 0.5 : 1.0; }  // as clipping would
  static optim::AdamWHyperparams hyper() { return {.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1}; }

  std::vector<dist::OffloadParameter> offloaded() const {
    std::vector<dist::OffloadParameter> list;
    for (std::size_t k = 0; k < params.size(); ++k) list.push_back({params[k], kDecay[k]});
    return list;
  }

  // What OffloadAdamW must reproduce: the fused AdamW over every whole parameter's fp32 copy.
  void reference_steps() {
    std::vector<at::Tensor> master, m, v;
    for (const auto& p : params) {
      master.push_back(p.to(torch::kFloat));
      m.push_back(torch::zeros({p.numel()}));
      v.push_back(torch::zeros({p.numel()}));
    }
    for (int step = 1; step <= kSteps; ++step) {
      auto g = gradient(step).to(torch::kFloat);
      if (grad_scale(step) != 1.0) g.mul_(grad_scale(step));
      for (std::size_t k = 0; k < params.size(); ++k) {
        auto hp = hyper();
        hp.lr = learning_rate(step);
        if (!kDecay[k]) hp.weight_decay = 0;
        auto gk = g.narrow(0, slots[k].offset, slots[k].numel);
        optim::adamw_step({{master[k].data_ptr<float>(), std::size_t(master[k].numel())},
                           {gk.data_ptr<float>(), std::size_t(gk.numel())},
                           {m[k].data_ptr<float>(), std::size_t(m[k].numel())},
                           {v[k].data_ptr<float>(), std::size_t(v[k].numel())}},
                          hp, step);
        params[k].copy_(master[k]);
      }
    }
  }

  // Steps first..last; `seen` (if given) gets a copy of the parameters after each.
  void offload_steps(dist::OffloadAdamW& optimizer, int first, int last, std::vector<at::Tensor>* seen = nullptr) const {
    for (int step = first; step <= last; ++step) {
      optimizer.step(gradient(step), learning_rate(step), grad_scale(step));
      if (seen) seen->push_back(torch::cat(params).clone());
    }
  }
  // Step 1 as offload_steps, steps 2..last delayed, then the pending update completed; `seen` gets
  // the parameters after each call.
  void delayed_steps(dist::OffloadAdamW& optimizer, int last, std::vector<at::Tensor>& seen) const {
    offload_steps(optimizer, 1, 1, &seen);
    for (int step = 2; step <= last; ++step) {
      optimizer.step_delayed(gradient(step), learning_rate(step), torch::scalar_tensor(grad_scale(step), torch::kDouble));
      seen.push_back(torch::cat(params).clone());
    }
    optimizer.complete_update();
    seen.push_back(torch::cat(params).clone());
  }
};

int run_offload_bits(const Args& a) {
  Group g = join_group();
  const auto dtype = a.dtype == "bf16" ? torch::kBFloat16 : a.dtype == "f16" ? torch::kHalf : torch::kFloat;
  const int steps = BitsProblem::kSteps;
  for (const std::int64_t chunk : a.chunks) {
    BitsProblem straight(dtype);
    std::uint64_t state_hash = 0, resumed_hash = 0, delayed_hash = 0, delayed_expected_hash = 0, delayed_state_hash = 0;
    if (chunk == 0) {
      straight.reference_steps();
      resumed_hash = hash_bits(straight.params);
    } else {
      dist::OffloadAdamW optimizer(straight.offloaded(), straight.slots, g.backend, BitsProblem::hyper(), {}, chunk);
      std::vector<at::Tensor> undelayed;  // the parameters after steps 1..4
      straight.offload_steps(optimizer, 1, steps, &undelayed);
      const auto hash_state = [](const dist::OffloadAdamW& o) {
        std::vector<at::Tensor> state;
        for (const auto& [name, tensor] : o.state()) state.push_back(tensor);
        return hash_bits(state);
      };
      state_hash = hash_state(optimizer);
      // Delayed from step 2: after steps 1, 2, 3, 4 and the completion the parameters are those of
      // undelayed steps 1, 1, 2, 3 and 4.
      BitsProblem delayed(dtype);
      dist::OffloadAdamW late(delayed.offloaded(), delayed.slots, g.backend, BitsProblem::hyper(), {}, chunk);
      std::vector<at::Tensor> seen;
      delayed.delayed_steps(late, steps, seen);
      delayed_hash = hash_bits(seen);
      delayed_expected_hash = hash_bits({undelayed[0], undelayed[0], undelayed[1], undelayed[2], undelayed[3]});
      delayed_state_hash = hash_state(late);
      // Halfway through, the state goes to a new optimizer with another chunk size (as a
      // resumed run would load it); the chunking is no part of the state.
      BitsProblem resumed(dtype);
      dist::OffloadAdamW first(resumed.offloaded(), resumed.slots, g.backend, BitsProblem::hyper(), {}, chunk);
      resumed.offload_steps(first, 1, steps / 2);
      dist::OffloadAdamW second(resumed.offloaded(), resumed.slots, g.backend, BitsProblem::hyper(), {}, chunk + 2);
      second.load_state(first.state());
      resumed.offload_steps(second, steps / 2 + 1, steps);
      resumed_hash = hash_bits(resumed.params);
    }
    std::printf("rank %d chunk %lld params %016llx state %016llx resumed %016llx delayed %016llx expected %016llx "
                "delayed_state %016llx\n",
                g.assignment.rank, static_cast<long long>(chunk), static_cast<unsigned long long>(hash_bits(straight.params)),
                static_cast<unsigned long long>(state_hash), static_cast<unsigned long long>(resumed_hash),
                static_cast<unsigned long long>(delayed_hash), static_cast<unsigned long long>(delayed_expected_hash),
                static_cast<unsigned long long>(delayed_state_hash));
  }
  g.backend->barrier()->wait();
  g.client->leave();
  return 0;
}

int run_offload_overlap(const Args& a) {
  const c10::Device cuda(c10::kCUDA, 0);
  Group g = join_group(cuda);
  torch::manual_seed(1);
  const at::Tensor parameter = torch::randn({a.params}, torch::TensorOptions().device(cuda));
  const at::Tensor gradient = torch::randn({a.params}, torch::TensorOptions().device(cuda)) * 1e-3;
  dist::OffloadAdamW optimizer({{parameter, true}}, {{0, a.params}}, g.backend,
                               optim::AdamWHyperparams{.lr = 0, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1},
                               // One thread: each chunk's update (~3 ms for 1M floats) clearly outlasts
                               // its copies (~0.2 ms), so a download that overlapped has landed.
                               optim::KernelOptions{.threads = 1}, a.chunk);
  // The parameter's old storage, which its move into the flat buffer freed: held back by the
  // caching allocator unless the optimizer gave it back.
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  std::printf("unused reserved MiB %lld\n",
              static_cast<long long>((stats.reserved_bytes[all].current - stats.allocated_bytes[all].current) >> 20));
  for (int step = 1; step <= a.steps; ++step) {
    optimizer.step(gradient, 1e-3, 1.0);
    torch::cuda::synchronize();
    const auto stats = optimizer.last_pipeline_stats();
    std::printf("step %d chunks %lld landed %lld\n", step, static_cast<long long>(stats.chunks),
                static_cast<long long>(stats.downloads_landed_before_wait));
  }
  std::fflush(stdout);
  g.backend->shutdown();
  g.client->leave();
  return 0;
}

int run_offload_delayed_order(const Args& a) {
  const c10::Device cuda(c10::kCUDA, 0);
  Group g = join_group(cuda);
  torch::manual_seed(1);
  const auto on_gpu = torch::TensorOptions().device(cuda);
  const auto type = a.dtype == "bf16" ? torch::kBFloat16 : torch::kFloat;
  const at::Tensor start = torch::randn({a.params}, on_gpu).to(type);
  const at::Tensor gradient = (torch::randn({a.params}, on_gpu) * 1e-3).to(type);
  const optim::AdamWHyperparams hyper{.lr = 0, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  at::Tensor delayed_parameter = start.clone(), plain_parameter = start.clone();
  dist::OffloadAdamW delayed({{delayed_parameter, true}}, {{0, a.params}}, g.backend, hyper, {}, a.chunk);
  dist::OffloadAdamW plain({{plain_parameter, true}}, {{0, a.params}}, g.backend, hyper, {}, a.chunk);
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  // How long until the device has done what is queued on it now.
  const auto device_wait_ms = [&] {
    const Clock::time_point t = Clock::now();
    at::cuda::CUDAEvent done;
    done.record(c10::cuda::getCurrentCUDAStream(0));
    done.synchronize();
    return ms_since(t);
  };

  plain.step(gradient, 1e-3, 1.0);
  plain.step(gradient, 1e-3, 1.0);
  const at::Tensor after_second = plain_parameter.clone();  // what the second update leaves
  const at::Tensor host = at::empty({a.params}, at::TensorOptions().dtype(type).pinned_memory(true));
  torch::cuda::synchronize();
  Clock::time_point t = Clock::now();
  host.copy_(gradient);
  const double download_ms = ms_since(t);
  const at::Tensor device_copy = at::empty_like(gradient);
  torch::cuda::synchronize();
  t = Clock::now();
  device_copy.copy_(host);
  const double upload_ms = ms_since(t);

  const at::Tensor flat = gradient.clone();  // the flat gradient buffer of a training step
  // The clipping scale as the engine gives it: on the device, read by the background update.
  const at::Tensor scale = torch::ones({}, on_gpu.dtype(torch::kDouble));
  // The first update, delayed and completed at once: the delayed steps' buffers are made.
  delayed.step_delayed(flat, 1e-3, scale);
  delayed.complete_update();
  torch::cuda::synchronize();
  t = Clock::now();
  delayed.step_delayed(flat, 1e-3, scale);
  const double queued_ms = ms_since(t);
  const double ready_ms = device_wait_ms();
  delayed.before_gradient_write();
  flat.fill_(std::nan(""));  // the next backward's first write
  flat.copy_(gradient);      // and its gradient
  // The second update's weights went up while the host computed it; applying them is a copy on
  // the device.
  delayed.step_delayed(flat, 1e-3, scale);
  const double applied_ms = device_wait_ms();
  const bool fresh = torch::equal(delayed_parameter, after_second);
  delayed.complete_update();
  plain.step(gradient, 1e-3, 1.0);
  torch::cuda::synchronize();
  std::printf("download ms %.3f upload ms %.3f queued ms %.3f ready ms %.3f applied ms %.3f fresh %d equal %d\n",
              download_ms, upload_ms, queued_ms, ready_ms, applied_ms, fresh ? 1 : 0,
              torch::equal(delayed_parameter, plain_parameter) ? 1 : 0);
  std::fflush(stdout);
  g.backend->shutdown();
  g.client->leave();
  return 0;
}

int run_hang() {
  auto engine = dist::make_distributed_engine({.use_cpu = true}, {.gloo_hostname = "127.0.0.1"});
  std::printf("rank %d joined\n", engine->rank());
  std::fflush(stdout);
  if (engine->rank() == 0) pause();  // the test kills this rank
  std::vector<double> never = engine->all_reduce_sum({1.0});  // blocks: rank 0 never joins it
  std::printf("rank %d all-reduce returned %g\n", engine->rank(), never[0]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (a.mode == "collectives") return run_collectives();
    if (a.mode == "train") return run_train(a);
    if (a.mode == "memory") return run_memory(a);
    if (a.mode == "offload-bits") return run_offload_bits(a);
    if (a.mode == "hang") return run_hang();
    if (a.mode == "deferred-fill") return run_deferred_fill(a);
    if (a.mode == "sharded-gradients") return run_sharded_gradients();
    if (a.mode == "offload-overlap") return run_offload_overlap(a);
    if (a.mode == "offload-delayed-order") return run_offload_delayed_order(a);
    std::cerr << "dist-test-worker: unknown --mode '" << a.mode << "'\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dist-test-worker: error: " << e.what() << '\n';
    return 1;
  }
}
