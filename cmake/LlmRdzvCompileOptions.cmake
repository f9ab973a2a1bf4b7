# Warning and sanitizer flags shared by every first-party target. Generated code and third-party
# headers are compiled as SYSTEM so -Wall -Wextra speak only about our code.
add_library(llmrdzv_warnings INTERFACE)
target_compile_options(llmrdzv_warnings INTERFACE -Wall -Wextra $<$<BOOL:${LLMRDZV_WERROR}>:-Werror>)

if(LLMRDZV_SANITIZE)
  if(LLMRDZV_WITH_TORCH)
    message(STATUS "LLMRDZV_SANITIZE: the LibTorch trainer is not built in the sanitizer build")
    set(LLMRDZV_WITH_TORCH OFF CACHE BOOL "" FORCE)
  endif()
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
