# LibTorch from the pinned PyPI wheel in the project venv (.venv, made by scripts/setup.sh).
# Provides the target llmrdzv::torch. Facts this relies on (measured, see README "Dependencies"):
#  - the wheel is a CUDA 13 build; CMake 3.25 cannot probe the GPU arch with CUDA 13, so an explicit
#    TORCH_CUDA_ARCH_LIST skips the probe (no GPU here anyway);
#  - libtorch_cuda.so needs the wheel's own NCCL/cuDNN/cuBLAS (site-packages/nvidia/*/lib), newer than
#    /usr/local/cuda's: they go on the link's rpath-link and the binaries' rpath;
#  - the wheel ships no gloo headers; Debian's libgloo-dev provides them for ProcessGroupGloo.hpp.
set(_py "${LLMRDZV_VENV}/bin/python")
if(NOT EXISTS "${_py}")
  message(FATAL_ERROR "No venv at ${LLMRDZV_VENV}: run scripts/setup.sh first (or -DLLMRDZV_WITH_TORCH=OFF)")
endif()
execute_process(
  COMMAND "${_py}" -c "import torch, os; print(torch.utils.cmake_prefix_path); print(os.path.dirname(os.path.dirname(torch.__file__)))"
  OUTPUT_VARIABLE _torch_out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _torch_rc
  ERROR_QUIET)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "${_py} cannot import torch: run scripts/setup.sh")
endif()
string(REPLACE "\n" ";" _torch_out "${_torch_out}")
list(GET _torch_out 0 _torch_prefix)
list(GET _torch_out 1 _site_packages)

if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()
if(EXISTS /usr/local/cuda/bin/nvcc AND NOT DEFINED CMAKE_CUDA_COMPILER)
  set(CUDAToolkit_ROOT /usr/local/cuda)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
find_package(Torch REQUIRED)

file(GLOB _nvidia_lib_dirs LIST_DIRECTORIES true "${_site_packages}/nvidia/*/lib")
list(JOIN _nvidia_lib_dirs ":" _nvidia_path)
add_library(llmrdzv_torch INTERFACE)
add_library(llmrdzv::torch ALIAS llmrdzv_torch)
target_link_libraries(llmrdzv_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(llmrdzv_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_compile_options(llmrdzv_torch INTERFACE ${TORCH_CXX_FLAGS})
if(_nvidia_path)
  target_link_options(llmrdzv_torch INTERFACE "LINKER:-rpath-link,${_nvidia_path}" "LINKER:-rpath,${_nvidia_path}")
endif()
set(LLMRDZV_TORCH_SITE_PACKAGES "${_site_packages}" CACHE INTERNAL "")
