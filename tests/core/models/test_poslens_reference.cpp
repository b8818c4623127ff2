// Parity with the PyTorch reference (tools/poslens_reference.py): the reference writes one small
// random model per position-encoding case with the captures of its own forward pass; PosLens
// loads each model and must reproduce every capture. Needs Debian's python3-torch
// (/usr/bin/python3); skipped with a message where it is absent.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/runtime/checkpoint.h"
#include "core/formats/safetensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

const char* kPython = "/usr/bin/python3";

bool python_has_torch() {
  return std::system((std::string(kPython) + " -c 'import torch' > /dev/null 2>&1").c_str()) == 0;
}

/// Largest |a - b| over entries where both are finite, and whether the -inf entries agree.
struct Difference {
  double max_abs = 0;
  bool same_infinities = true;
};

Difference compare(const at::Tensor& a, const at::Tensor& b) {
  const auto fa = torch::isfinite(a), fb = torch::isfinite(b);
  Difference d;
  d.same_infinities = torch::equal(fa, fb);
  if (fa.any().item<bool>())
    d.max_abs = (a.masked_select(fa & fb) - b.masked_select(fa & fb)).abs().max().item<double>();
  return d;
}

TEST(PosLensReference, EveryCaseMatchesPyTorch) {
  if (!python_has_torch())
    POSLENS_MISSING_PREREQUISITE(kPython << " cannot import torch (install python3-torch: scripts/setup.sh)");
  const auto out = test::scratch_dir();
  const std::string command = std::string(kPython) + " " + POSLENS_SOURCE_DIR +
                              "/tools/poslens_reference.py make-test-models " + out.string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  nlohmann::json cases;
  std::ifstream(out / "cases.json") >> cases;
  // Every case of tools/poslens_test_models.py's TEST_CASES (28): one left out is a failure.
  ASSERT_EQ(cases.size(), 28u) << "tools/poslens_test_models.py made " << cases.size() << " cases";
  for (const auto& entry : cases) {
    const std::string name = entry.get<std::string>();
    SCOPED_TRACE(name);
    LoadedModel loaded;
    try {
      loaded = load_checkpoint((out / name).string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "cannot load: " << e.what();
      continue;
    }
    SafetensorsFile reference((out / name / "reference.safetensors").string());
    const auto ids = reference.load("input_ids").clone();
    Captures captures;
    loaded.model->forward(ids, CaptureSpec::all(), &captures);

    int compared = 0;
    for (const auto& info : reference.tensors()) {
      if (info.name == "input_ids") continue;
      const auto point = HookPoint::parse(info.name);
      ASSERT_TRUE(point) << "reference capture with a name outside docs/formulas.md §1: " << info.name;
      const auto ours = captures.find(*point);
      ASSERT_TRUE(ours.defined()) << "PosLens has no " << info.name;
      const auto theirs = reference.load(info.name).to(torch::kFloat32);
      ASSERT_EQ(ours.sizes(), theirs.sizes()) << info.name;
      const auto diff = compare(ours, theirs);
      EXPECT_TRUE(diff.same_infinities) << info.name << ": masked entries differ";
      const double scale = std::max(1.0, theirs.masked_select(torch::isfinite(theirs)).abs().max().item<double>());
      EXPECT_LT(diff.max_abs, 1e-4 * scale) << info.name;
      ++compared;
    }
    EXPECT_GE(compared, 10) << "too few captures compared";
  }
}

}  // namespace
}  // namespace poslens
