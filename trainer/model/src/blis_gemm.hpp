// fp32 GEMM on BLIS, for the CPU linear layers on CPUs where it beats the wheel's MKL (see
// fast_linear.cpp). Torch-free, so blis.h and its macros stay out of every torch TU.
#pragma once

#include <cstdint>
#include <string>

namespace llmrdzv::model::detail {

// A strided fp32 matrix: element (i, j) at data[i * row_stride + j * col_stride].
struct StridedMatrix {
  const float* data;
  std::int64_t rows, cols, row_stride, col_stride;
};

// c = a b + beta c, for a [m, k], b [k, n] and c [m, n] row-major with row stride c_row_stride, on
// `threads` threads of the calling process's OpenMP runtime (the one LibTorch uses).
void blis_sgemm(const StridedMatrix& a, const StridedMatrix& b, float beta, float* c, std::int64_t c_row_stride,
                int threads);

// The name of the configuration BLIS chose for this CPU ("zen3", "haswell", ...): "generic" where
// it knows no kernels for it (a CPU newer than the library), whose reference code is several
// times slower than oneDNN. BLIS_ARCH_TYPE in the environment overrides BLIS's choice.
std::string blis_configuration();

}  // namespace llmrdzv::model::detail
