# LibTorch from the pinned PyPI wheel in the project venv (.venv, made by scripts/setup.sh), or
# from any torch >= 2.11 a site already has: -DLLMRDZV_TORCH_PYTHON=/path/to/python (an interpreter
# that imports it). Provides the target llmrdzv::torch. Facts this relies on (measured, see README):
#  - the wheel is a CUDA 13 build; CMake 3.25 cannot probe the GPU arch with CUDA 13, so an explicit
#    TORCH_CUDA_ARCH_LIST skips the probe (no GPU here anyway);
#  - libtorch_cuda.so needs the wheel's own NCCL/cuDNN/cuBLAS (site-packages/nvidia/*/lib), newer than
#    /usr/local/cuda's: they go on the link's rpath-link and the binaries' rpath;
#  - the wheel ships no gloo headers; Debian's libgloo-dev provides them for ProcessGroupGloo.hpp.
set(LLMRDZV_TORCH_PYTHON "${LLMRDZV_VENV}/bin/python" CACHE FILEPATH
    "Python interpreter whose torch (>= 2.11) the trainer builds against; default: the project venv's")
set(_py "${LLMRDZV_TORCH_PYTHON}")
if(NOT EXISTS "${_py}")
  message(FATAL_ERROR "No Python at ${_py}: run scripts/setup.sh first, name a site torch with "
                      "-DLLMRDZV_TORCH_PYTHON=/path/to/python, or build without the trainer (-DLLMRDZV_WITH_TORCH=OFF)")
endif()
execute_process(
  COMMAND "${_py}" -c "import torch, os; print(torch.utils.cmake_prefix_path); print(os.path.dirname(os.path.dirname(torch.__file__))); print(torch.__version__); print(torch.version.cuda or 'none')"
  OUTPUT_VARIABLE _torch_out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _torch_rc
  ERROR_VARIABLE _torch_err)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "${_py} cannot import torch (run scripts/setup.sh, or name another interpreter with "
                      "-DLLMRDZV_TORCH_PYTHON): ${_torch_err}")
endif()
string(REPLACE "\n" ";" _torch_out "${_torch_out}")
list(GET _torch_out 0 _torch_prefix)
list(GET _torch_out 1 _site_packages)
list(GET _torch_out 2 LLMRDZV_TORCH_VERSION)  # as torch says it, e.g. 2.11.0+cu130
list(GET _torch_out 3 _torch_cuda)
string(REGEX REPLACE "\\+.*" "" LLMRDZV_TORCH_VERSION_PLAIN "${LLMRDZV_TORCH_VERSION}")
if(LLMRDZV_TORCH_VERSION_PLAIN VERSION_LESS 2.11)
  message(FATAL_ERROR "${_py} has torch ${LLMRDZV_TORCH_VERSION}; the trainer needs torch 2.11 or newer")
endif()
message(STATUS "LibTorch: torch ${LLMRDZV_TORCH_VERSION} (CUDA ${_torch_cuda}) from ${_site_packages}")

if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()
if(EXISTS /usr/local/cuda/bin/nvcc AND NOT DEFINED CMAKE_CUDA_COMPILER)
  set(CUDAToolkit_ROOT /usr/local/cuda)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
find_package(Torch REQUIRED)

# The trainer's own CUDA kernels (trainer/model/src/cuda, trainer/optim/src/cuda) build where torch
# is a CUDA build and CMake has enabled CUDA with it (a CPU-only torch enables no CUDA language,
# even where nvcc is installed), with an nvcc of torch's CUDA major version: the kernels link the
# toolkit's CUDA runtime (libcudart.so.<major>), which must be the one torch loads. For the
# data-centre GPUs from T4 (sm_75) through A100 (sm_80) and H100 (sm_90), with sm_90's PTX for
# newer ones.
string(REGEX MATCH "^[0-9]+" _torch_cuda_major "${_torch_cuda}")
string(REGEX MATCH "^[0-9]+" _nvcc_major "${CMAKE_CUDA_COMPILER_VERSION}")
if(CMAKE_CUDA_COMPILER_LOADED AND _torch_cuda_major AND _torch_cuda_major STREQUAL _nvcc_major)
  set(LLMRDZV_CUDA_KERNELS ON CACHE INTERNAL "")
  set(LLMRDZV_CUDA_KERNEL_ARCHITECTURES "75;80;90" CACHE INTERNAL "")
else()
  set(LLMRDZV_CUDA_KERNELS OFF CACHE INTERNAL "")
  if(CMAKE_CUDA_COMPILER_LOADED AND _torch_cuda_major)
    message(STATUS "The trainer's CUDA kernels: not built: nvcc ${CMAKE_CUDA_COMPILER_VERSION} is not of torch's "
                   "CUDA ${_torch_cuda} (name a matching one with -DCMAKE_CUDA_COMPILER)")
  endif()
endif()

# llmrdzv_add_cuda_kernels(NAME SOURCES... ): a static library of .cu files for the trainer's CUDA
# kernels, of its own so that no torch flags (-fopenmp) or host warning flags reach nvcc; the
# shared CUDA runtime LibTorch loads; the architectures above; nvcc's warnings as errors under
# LLMRDZV_WERROR, ptxas's among them: a kernel whose registers spill to local memory (a register
# budget its __launch_bounds__ sets too tight) fails the build.
function(llmrdzv_add_cuda_kernels name)
  add_library(${name} STATIC ${ARGN})
  set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES "${LLMRDZV_CUDA_KERNEL_ARCHITECTURES}"
                        CUDA_RUNTIME_LIBRARY Shared CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_link_libraries(${name} PRIVATE llmrdzv::kernel_support)
  target_compile_options(${name} PRIVATE "-Xcompiler=-Wall,-Wextra" "-Xptxas=--warn-on-spills"
                         $<$<BOOL:${LLMRDZV_WERROR}>:-Werror=all-warnings>)
endfunction()

file(GLOB _nvidia_lib_dirs LIST_DIRECTORIES true "${_site_packages}/nvidia/*/lib")
list(JOIN _nvidia_lib_dirs ":" _nvidia_path)
# LibTorch as its CMake package gives it (llmrdzv_torch_as_packaged: only tests/trainer/link's
# bad-link probe uses it directly), and llmrdzv::torch, which every binary links.
add_library(llmrdzv_torch_as_packaged INTERFACE)
target_link_libraries(llmrdzv_torch_as_packaged INTERFACE ${TORCH_LIBRARIES})
target_include_directories(llmrdzv_torch_as_packaged SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_compile_options(llmrdzv_torch_as_packaged INTERFACE ${TORCH_CXX_FLAGS})
if(_nvidia_path)
  target_link_options(llmrdzv_torch_as_packaged INTERFACE "LINKER:-rpath-link,${_nvidia_path}" "LINKER:-rpath,${_nvidia_path}")
endif()
add_library(llmrdzv_torch INTERFACE)
add_library(llmrdzv::torch ALIAS llmrdzv_torch)
# libstdc++ is linked before LibTorch, always as a dependency: libtorch exports its own copies of
# libstdc++ functions (std::filesystem among them). Where the linker runs with --as-needed (Ubuntu's
# default) and meets libtorch first, it binds our calls to those copies and drops libstdc++ from
# DT_NEEDED, and std::filesystem::remove_all then crashes at run time. tests/trainer/link checks
# every torch-linked binary for such bindings.
target_link_libraries(llmrdzv_torch INTERFACE "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state"
                      llmrdzv_torch_as_packaged)
set(LLMRDZV_TORCH_SITE_PACKAGES "${_site_packages}" CACHE INTERNAL "")

# at::parallel_for is a header template: with torch's OpenMP backend (AT_PARALLEL_OPENMP, the
# wheels' on Linux) it runs its range over threads only in code compiled with -fopenmp, and
# serially in the calling thread without it. So the project's own kernels (fused RMSNorm, SwiGLU,
# rotary embeddings, dropout masks) are compiled with -fopenmp, and linked to the OpenMP runtime
# LibTorch itself loads (the wheel's torch/lib/libgomp.so.1; the system's where torch has none),
# so that one thread pool serves both.
file(STRINGS "${TORCH_INSTALL_PREFIX}/include/ATen/Config.h" _at_openmp REGEX "#define AT_PARALLEL_OPENMP 1")
if(_at_openmp)
  target_compile_options(llmrdzv_torch INTERFACE -fopenmp)
  if(EXISTS "${TORCH_INSTALL_PREFIX}/lib/libgomp.so.1")
    target_link_libraries(llmrdzv_torch INTERFACE "${TORCH_INSTALL_PREFIX}/lib/libgomp.so.1")
  else()
    find_package(OpenMP REQUIRED COMPONENTS CXX)
    target_link_libraries(llmrdzv_torch INTERFACE OpenMP::OpenMP_CXX)
  endif()
endif()

# c10d::Store's virtual barrier(key, world_size, timeout) is newer than torch 2.11; RdzvStore
# overrides it only where the base class declares it.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${TORCH_INCLUDE_DIRS})
set(CMAKE_REQUIRED_FLAGS "-std=c++20 ${TORCH_CXX_FLAGS}")
set(CMAKE_REQUIRED_QUIET ON)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # compiled only: linking needs all of LibTorch
check_cxx_source_compiles([[
#include <torch/csrc/distributed/c10d/Store.hpp>
struct S : c10d::Store {
  void barrier(const std::string&, std::int64_t, const std::chrono::milliseconds&) override {}
};
int main() {}
]] LLMRDZV_TORCH_STORE_HAS_BARRIER)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_QUIET)
unset(CMAKE_TRY_COMPILE_TARGET_TYPE)
target_compile_definitions(llmrdzv_torch INTERFACE
                           LLMRDZV_TORCH_STORE_HAS_BARRIER=$<BOOL:${LLMRDZV_TORCH_STORE_HAS_BARRIER}>)
