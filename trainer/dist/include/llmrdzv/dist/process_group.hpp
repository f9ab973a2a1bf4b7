// Builds the collective backend for one round: ProcessGroupGloo on the CPU, ProcessGroupNCCL
// when the training device is a GPU. Both rendezvous through an RdzvStore (never TCPStore).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <c10/core/Device.h>

#include <chrono>
#include <string>

namespace llmrdzv::dist {

struct ProcessGroupSettings {
  // Gloo's transport address: a host name or address this rank binds and others connect to.
  // Used when `gloo_interface` is empty. Empty too: this machine's host name.
  std::string gloo_hostname{};
  // A network interface (e.g. "ib0", "eth0") to bind Gloo to instead.
  std::string gloo_interface{};
  // Collective time limit; a peer that hangs longer fails the collective.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

// Gloo on a CPU device, NCCL on a CUDA device (rank's GPU = `device`). Throws
// std::invalid_argument for other device types and c10 errors when the rendezvous fails.
c10::intrusive_ptr<c10d::Backend> make_process_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int world_size, c10::Device device,
                                                     const ProcessGroupSettings& settings);

// The two backends (process_group_gloo.cpp, process_group_nccl.cpp).
c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size,
                                                    const ProcessGroupSettings& settings);
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size, c10::Device device,
                                                    const ProcessGroupSettings& settings);

}  // namespace llmrdzv::dist
