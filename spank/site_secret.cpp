// Site secret reader (see site_secret.hpp).
#include "site_secret.hpp"

#include "args.hpp"
#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv::spank {

std::string read_site_secret(const std::string& path, unsigned expected_owner) {
  try {
    return read_secret_file(path, expected_owner);
  } catch (const std::runtime_error& e) {
    throw ArgError(std::string("secret_file: ") + e.what());
  }
}

}  // namespace llmrdzv::spank
