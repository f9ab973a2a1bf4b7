# llmrdzv_add_catch_test(NAME SOURCES a.cpp b.cpp LIBS x y [LABELS l1 l2])
# One Catch2 binary per component; every TEST_CASE becomes its own ctest test. Catch2's main is
# compiled once (it is the slowest TU of the test build, minutes under ASan) and shared.
if(NOT TARGET llmrdzv_catch_main)
  add_library(llmrdzv_catch_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/catch_main.cpp)
  target_link_libraries(llmrdzv_catch_main PUBLIC Catch2::Catch2)
  # tests/support: the catch main and headers every test may use (scratch_dir.hpp).
  target_include_directories(llmrdzv_catch_main PUBLIC ${PROJECT_SOURCE_DIR}/tests/support)
  # The main only parses options and runs tests: optimising it buys nothing and costs minutes.
  target_compile_options(llmrdzv_catch_main PRIVATE -O0 -g0)
endif()

function(llmrdzv_add_catch_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE llmrdzv_catch_main Catch2::Catch2 llmrdzv_warnings ${T_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  # --warn NoTests: a ctest entry whose name matches no test case fails instead of passing empty
  # (catch_discover_tests splits names at ';', so such a name would otherwise run nothing).
  # One label: Catch2 v2's discovery flattens a label list and would keep only its first entry,
  # so "trainer unit" becomes "trainer-unit", which ctest -L unit and -L trainer both select.
  list(JOIN T_LABELS "-" _label)
  # With no GPU visible: these are the CPU suite, and on a GPU host the trainers they start would
  # otherwise train on CUDA in bf16 by default and miss their fp32 tolerances. The CUDA paths are
  # the gpu label's (tests/trainer/gpu).
  catch_discover_tests(${name} TEST_PREFIX "${name}:" EXTRA_ARGS --warn NoTests
                       PROPERTIES LABELS "${_label}" ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
endfunction()
