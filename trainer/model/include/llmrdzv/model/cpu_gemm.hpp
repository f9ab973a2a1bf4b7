// Which library runs the models' fp32 matrix products on this CPU (chosen per CPU in
// fast_linear.cpp), so the trainer can say so in its log.
#pragma once

#include <string>

namespace llmrdzv::model {

// "BLIS (its zen3 kernels)", "oneDNN and torch's BLAS" or "torch's BLAS", the latter two saying
// so where BLIS was passed over for having no kernels for this CPU.
std::string cpu_gemm_backend();

// The configuration BLIS chose for this CPU ("zen3", "haswell", or "generic" where it has no
// kernels for it, and then it is not used); empty in a build without BLIS.
std::string blis_configuration();

}  // namespace llmrdzv::model
