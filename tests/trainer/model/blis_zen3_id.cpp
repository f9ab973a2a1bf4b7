// Prints BLIS's id of its Zen 3 configuration, for the test that forces it: BLIS_ARCH_TYPE takes
// the id as a number (BLIS 0.9 reads a name such as "zen3" as 0, its Skylake-X configuration), and
// the numbers change between BLIS versions, so CMake asks the installed blis.h.
#include <blis.h>

#include <cstdio>

int main() { std::printf("%d", static_cast<int>(BLIS_ARCH_ZEN3)); }
