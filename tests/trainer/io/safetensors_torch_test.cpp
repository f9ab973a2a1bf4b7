// at::Tensor <-> safetensors: every dtype round-trips bit-exactly, views over the memory map stay
// valid after the file object is gone and never write back to the file, non-contiguous tensors
// are written as their logical contents.
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/safetensors_torch.hpp"
#include "scratch_dir.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;

TEST_CASE("tensors of every dtype round trip bit-exactly", "[safetensors][torch]") {
  testing::ScratchDir dir;
  io::NamedTensors tensors;
  const at::Tensor base = at::randn({3, 5}).mul(10);
  for (at::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort, at::kChar,
                           at::kByte, at::kBool, at::kUInt16, at::kUInt32, at::kUInt64, at::kFloat8_e4m3fn, at::kFloat8_e5m2}) {
    tensors.emplace_back(std::string("t_") + c10::toString(t), base.abs().to(t));
  }
  tensors.emplace_back("transposed", base.t());  // non-contiguous
  io::save_tensors(dir / "all.safetensors", tensors, {{"format", "pt"}});
  for (bool alias : {false, true}) {
    const io::NamedTensors back = io::read_tensors(io::SafetensorsFile::open(dir / "all.safetensors"), alias);
    REQUIRE(back.size() == tensors.size());
    for (std::size_t i = 0; i < back.size(); ++i) {
      INFO(tensors[i].first);
      CHECK(back[i].first == tensors[i].first);
      CHECK(back[i].second.scalar_type() == tensors[i].second.scalar_type());
      CHECK(back[i].second.sizes() == tensors[i].second.sizes());
      CHECK(at::equal(back[i].second.view(at::kByte), tensors[i].second.contiguous().view(at::kByte)));
    }
  }
}

TEST_CASE("memory-mapped tensors outlive the file object and never write to the file", "[safetensors][torch]") {
  testing::ScratchDir dir;
  const at::Tensor w = at::arange(1000, at::kFloat);
  io::save_tensors(dir / "w.safetensors", {{"w", w}});
  const std::string before = io::read_file(dir / "w.safetensors");
  at::Tensor view;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(dir / "w.safetensors");
    view = io::tensor_from(file, *file.find("w"), /*alias=*/true);
    CHECK(view.data_ptr() == static_cast<const void*>(file.data(*file.find("w")).data()));
  }
  CHECK(at::equal(view, w));
  view.mul_(2);  // private copy-on-write pages
  CHECK(view[10].item<float>() == 20.0f);
  CHECK(io::read_file(dir / "w.safetensors") == before);
}

TEST_CASE("types safetensors cannot hold are refused", "[safetensors][torch]") {
  testing::ScratchDir dir;
  CHECK_THROWS_WITH(io::save_tensors(dir / "c.safetensors", {{"c", at::randn({2}, at::kComplexDouble)}}),
                    "safetensors cannot store tensors of type ComplexDouble");
  CHECK_THROWS_WITH(io::save_tensors(dir / "u.safetensors", {{"u", at::Tensor()}}), Catch::Contains("tensor \"u\" is undefined"));
  CHECK_FALSE(std::filesystem::exists(dir / "c.safetensors"));
}
