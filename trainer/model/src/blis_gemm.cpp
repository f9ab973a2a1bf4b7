// blis_gemm.hpp over BLIS's typed expert API: strides as given (a transpose is a stride swap, no
// copy), the thread count per call through a runtime object instead of BLIS's process-wide setting.
#include "blis_gemm.hpp"

#include <blis.h>

namespace llmrdzv::model::detail {

void blis_sgemm(const StridedMatrix& a, const StridedMatrix& b, float beta, float* c, std::int64_t c_row_stride,
                int threads) {
  // From the global runtime, not BLIS_RNTM_INITIALIZER: BLIS 1.x designates that initializer's
  // fields out of their declaration order, which C++20 refuses.
  rntm_t runtime;
  bli_rntm_init_from_global(&runtime);
  bli_rntm_set_num_threads(threads, &runtime);
  float one = 1.0f;
  bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, a.rows, b.cols, a.cols, &one, const_cast<float*>(a.data),
               a.row_stride, a.col_stride, const_cast<float*>(b.data), b.row_stride, b.col_stride, &beta, c, c_row_stride,
               1, nullptr, &runtime);
}

std::string blis_configuration() {
  // Initialised first: with BLIS_ARCH_TYPE set, BLIS 0.9 looks the id up in tables bli_init() fills.
  bli_init();
  return bli_arch_string(bli_arch_query_id());
}

}  // namespace llmrdzv::model::detail
