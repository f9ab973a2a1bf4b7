// Which library runs the models' fp32 matrix products on this CPU (chosen per CPU in
// fast_linear.cpp), so the trainer can say so in its log.
#pragma once

#include <string>

namespace llmrdzv::model {

// "BLIS", "oneDNN and torch's BLAS" or "torch's BLAS".
std::string cpu_gemm_backend();

}  // namespace llmrdzv::model
