# Finds every external dependency once, for all components. Everything comes from Debian packages
# (scripts/setup.sh installs them) except LibTorch, which comes from the pinned PyPI wheel in the
# project venv (see LlmRdzvTorch.cmake).
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)  # the token cache's checksums
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)  # rdzvd's sd_notify (Type=notify, watchdog)
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(OpenSSL REQUIRED)
if(LLMRDZV_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()
if(LLMRDZV_WITH_SLURM)
  find_path(SLURM_INCLUDE_DIR slurm/spank.h REQUIRED)
endif()
# The venv also gives the tokenizer and data tests their HF oracle (transformers/tokenizers).
set(LLMRDZV_VENV "${PROJECT_SOURCE_DIR}/.venv" CACHE PATH "Project virtualenv holding the pinned torch wheel")
# TensorBoard, whose reader the TensorBoard tests use (scripts/setup.sh makes it).
set(LLMRDZV_TOOLS_VENV "${PROJECT_SOURCE_DIR}/.venv-tools" CACHE PATH "Virtualenv holding TensorBoard")
if(LLMRDZV_WITH_TORCH)
  include(LlmRdzvTorch)
endif()
