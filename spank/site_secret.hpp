// Reading the site secret for site-mode tokens. slurmstepd reads it as root; a secret that
// others could read or replace is refused, since anyone holding it can forge every token.
#pragma once

#include <string>

namespace llmrdzv::spank {

// The file's content without trailing whitespace. Throws ArgError if the file is missing, not
// owned by `expected_owner`, accessible to group or others, or empty.
std::string read_site_secret(const std::string& path, unsigned expected_owner = 0);

}  // namespace llmrdzv::spank
