// The safetensors dtype table: names as they appear in headers and element sizes.
#include <array>
#include <utility>

#include "llmrdzv/io/safetensors.hpp"

namespace llmrdzv::io {
namespace {

struct DtypeRow {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DtypeRow, 15> kDtypes{{
    {Dtype::BOOL, "BOOL", 1}, {Dtype::U8, "U8", 1},     {Dtype::I8, "I8", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},   {Dtype::F16, "F16", 2},   {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},   {Dtype::U32, "U32", 4},   {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},   {Dtype::I64, "I64", 8},   {Dtype::U64, "U64", 8},
}};

const DtypeRow& row(Dtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)]; }

}  // namespace

std::string_view dtype_name(Dtype dtype) { return row(dtype).name; }
std::size_t dtype_size(Dtype dtype) { return row(dtype).size; }

bool dtype_from_name(std::string_view name, Dtype& out) {
  for (const DtypeRow& r : kDtypes) {
    if (r.name == name) {
      out = r.dtype;
      return true;
    }
  }
  return false;
}

}  // namespace llmrdzv::io
