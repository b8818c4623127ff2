// Tests of the torch.save zip reader (core/torch_zip.h) on archives written by Debian's
// python3-torch at test time: values compared with the raw bytes Python dumped, views, tied
// storages, parameters, nested checkpoints, and pickled code refused without running it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/base/error.h"
#include "core/formats/torch_zip.h"
#include "fixtures.h"
#include "torch_zip_archives.h"

namespace poslens {
namespace {

using namespace torch_zip_test;

// ---------------------------------------------------------------------------------------------
// Archives written by Python's torch.save (python3-torch), created once for the suite

/// Writes every archive the tests below read into argv[1] (argv[2]: the file evil.pt's payload
/// would touch), plus for each tensor its raw bytes (<file>.<name>
/// .raw) and a manifest line "file name dtype d0,d1,..." in manifest.txt, in save order.
const char* const kPythonScript = R"PY(
import collections, os, sys, zipfile
import torch

out = sys.argv[1]
manifest = open(os.path.join(out, "manifest.txt"), "w")

def save(obj, file, **kwargs):
    torch.save(obj, os.path.join(out, file), **kwargs)

def dump(file, tensors):
    for name, t in tensors.items():
        shape = ",".join(str(d) for d in t.shape)
        manifest.write(f"{file} {name} {t.dtype} {shape}\n")
        raw = t.contiguous().flatten().view(torch.uint8).numpy().tobytes()
        open(os.path.join(out, f"{file}.{name}.raw"), "wb").write(raw)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(5, 4)
        self.lin = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.register_buffer("position_ids", torch.arange(7).unsqueeze(0))

torch.manual_seed(0)
net = Net()
net.emb.to(torch.bfloat16)
net.lin.to(torch.float16)
sd = net.state_dict()
assert isinstance(sd, collections.OrderedDict) and hasattr(sd, "_metadata")
save(sd, "module.pt")
dump("module.pt", sd)

base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
views = {"t": base[1:, 2:].t(), "row": base[2]}
assert views["t"].storage_offset() == 8 and views["t"].stride() == (1, 6)
save(views, "views.pt")

w = torch.randn(3, 4)
save({"a": w, "b": w, "c": w[1], "d": w.t()}, "tied.pt")
dump("tied.pt", {"a": w})

params = {"p": torch.nn.Parameter(torch.arange(6.0).reshape(2, 3)),
          "frozen": torch.nn.Parameter(torch.full((2,), -1.5, dtype=torch.float64),
                                       requires_grad=False)}
save(params, "params.pt")
assert b"_rebuild_parameter" in zipfile.ZipFile(os.path.join(out, "params.pt")).read("params/data.pkl")

small = torch.nn.Linear(2, 2)
with torch.no_grad():
    small.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    small.bias.copy_(torch.tensor([-1.0, 0.5]))
save({"model": small.state_dict(), "step": 5, "lr": 0.1, "name": "run", "done": True,
      "nothing": None, "history": [torch.tensor([7.0, 8.0]), 3],
      "opt": {"state": {0: {"exp_avg": torch.ones(2)}}, "param_groups": [{"lr": 0.1, "params": [0]}]}},
     "nested.pt")

save(views, "protocol4.pt", pickle_protocol=4)
assert b"\x93" in zipfile.ZipFile(os.path.join(out, "protocol4.pt")).read("protocol4/data.pkl")

class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))

save({"w": torch.ones(1), "evil": Evil()}, "evil.pt")
save({"w": torch.ones(2), "fn": print}, "function.pt")
save(sd, "legacy.pt", _use_new_zipfile_serialization=False)
save(torch.ones(3), "bare_tensor.pt")
torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(out, "scripted.pt"))
manifest.close()
)PY";

class TorchZipPython : public ::testing::Test {
 protected:
  /// Runs the script once per script text: ctest runs every test in its own process, so the
  /// archives are made in a private folder and renamed into a shared one that later processes
  /// reuse (the loser of a race just drops its copy).
  static void SetUpTestSuite() {
    const fs::path root = fs::temp_directory_path() / "poslens-tests";
    std::ostringstream key;
    key << std::hex << std::hash<std::string>{}(kPythonScript);
    dir_ = root / ("TorchZipPython-" + key.str());
    marker_ = root / "TorchZipPython-pwned";
    if (fs::exists(dir_ / "complete")) {
      script_ok_ = true;
      return;
    }
    if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
      skip_ = "/usr/bin/python3 cannot import torch (install python3-torch to run these tests)";
      return;
    }
    const fs::path tmp = root / ("TorchZipPython-tmp-" + std::to_string(::getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    write_file(tmp / "make.py", kPythonScript);
    const std::string cmd = "/usr/bin/python3 '" + (tmp / "make.py").string() + "' '" +
                            tmp.string() + "' '" + marker_.string() + "' > '" +
                            (tmp / "make.log").string() + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      log_ = read_file(tmp / "make.log");
      fs::remove_all(tmp);
      return;
    }
    write_file(tmp / "complete", "");
    std::error_code ec;
    fs::rename(tmp, dir_, ec);  // fails when another process got there first
    if (ec) fs::remove_all(tmp);
    script_ok_ = fs::exists(dir_ / "complete");
  }
  void SetUp() override {
    if (!skip_.empty()) POSLENS_MISSING_PREREQUISITE(skip_);
    ASSERT_TRUE(script_ok_) << "the Python script failed:\n" << log_;
  }
  static std::string path(const std::string& file) { return (dir_ / file).string(); }

  static fs::path dir_;
  static fs::path marker_;  // the file evil.pt's payload would create
  static std::string skip_;
  static std::string log_;
  static bool script_ok_;
};

fs::path TorchZipPython::dir_;
fs::path TorchZipPython::marker_;
std::string TorchZipPython::skip_;
std::string TorchZipPython::log_;
bool TorchZipPython::script_ok_ = false;

struct ManifestEntry {
  std::string name;
  std::string dtype;  // safetensors spelling
  std::vector<int64_t> shape;
};

/// The manifest lines for `file`, in the order Python saved them.
std::vector<ManifestEntry> manifest(const fs::path& dir, const std::string& file) {
  static const std::map<std::string, std::string> kDType = {
      {"torch.float32", "F32"}, {"torch.float16", "F16"}, {"torch.bfloat16", "BF16"},
      {"torch.float64", "F64"}, {"torch.int64", "I64"},   {"torch.int32", "I32"},
      {"torch.int16", "I16"},   {"torch.int8", "I8"},     {"torch.uint8", "U8"},
      {"torch.bool", "BOOL"}};
  std::vector<ManifestEntry> out;
  std::istringstream lines(read_file(dir / "manifest.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string f, name, dtype, shape;
    fields >> f >> name >> dtype >> shape;
    if (f != file) continue;
    ManifestEntry e{name, kDType.at(dtype), {}};
    std::istringstream dims(shape);
    for (std::string d; std::getline(dims, d, ',');) e.shape.push_back(std::stoll(d));
    out.push_back(e);
  }
  return out;
}

TEST_F(TorchZipPython, ModuleStateDictMatchesWhatPythonSaved) {
  TorchZipFile file(path("module.pt"));
  const std::vector<ManifestEntry> expected = manifest(dir_, "module.pt");
  ASSERT_EQ(expected.size(), 6u);  // emb.weight, lin.weight, lin.bias, norm.weight/bias, ids
  ASSERT_EQ(file.tensors().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    const TensorInfo& info = file.tensors()[i];
    EXPECT_EQ(info.name, expected[i].name);
    EXPECT_EQ(to_string(info.dtype), expected[i].dtype);
    EXPECT_EQ(info.shape, expected[i].shape);
    const at::Tensor t = file.load(info.name);
    EXPECT_EQ(t.sizes().vec(), expected[i].shape);
    EXPECT_EQ(tensor_bytes(t), read_file(dir_ / ("module.pt." + info.name + ".raw")));
  }
  // Values known without Python's dump: dtypes as converted, LayerNorm's init, the buffer.
  EXPECT_EQ(file.load("emb.weight").scalar_type(), at::kBFloat16);
  EXPECT_EQ(file.load("lin.weight").scalar_type(), at::kHalf);
  EXPECT_TRUE(torch::equal(file.load("norm.weight"), torch::ones({3})));
  EXPECT_TRUE(torch::equal(file.load("norm.bias"), torch::zeros({3})));
  EXPECT_TRUE(torch::equal(file.load("position_ids"), torch::arange(7, torch::kLong).unsqueeze(0)));
}

TEST_F(TorchZipPython, TransposedViewKeepsOffsetAndStrides) {
  for (const char* name : {"views.pt", "protocol4.pt"}) {
    SCOPED_TRACE(name);
    TorchZipFile file(path(name));
    ASSERT_EQ(file.tensors().size(), 2u);
    const at::Tensor base = torch::arange(24, torch::kFloat).reshape({4, 6});
    const at::Tensor t = file.load("t");
    EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4, 3}));
    EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 6}));
    EXPECT_TRUE(torch::equal(t, base.slice(0, 1).slice(1, 2).t()));
    EXPECT_EQ(t[0][0].item<float>(), 8.f);  // storage offset 8
    EXPECT_TRUE(torch::equal(file.load("row"), torch::arange(12, 18, torch::kFloat)));
  }
}

TEST_F(TorchZipPython, TiedTensorsShareOneStorage) {
  TorchZipFile file(path("tied.pt"));
  ASSERT_EQ(file.tensors().size(), 4u);
  const at::Tensor a = file.load("a");
  ASSERT_EQ(tensor_bytes(a), read_file(dir_ / "tied.pt.a.raw"));
  const at::Tensor b = file.load("b");
  const at::Tensor c = file.load("c");
  const at::Tensor d = file.load("d");
  EXPECT_TRUE(torch::equal(b, a));
  EXPECT_TRUE(torch::equal(c, a[1]));
  EXPECT_TRUE(torch::equal(d, a.t()));
  EXPECT_EQ(b.data_ptr(), a.data_ptr());
  EXPECT_EQ(static_cast<char*>(c.data_ptr()), static_cast<char*>(a.data_ptr()) + 4 * 4);
}

TEST_F(TorchZipPython, ParametersReadAsTheirData) {
  TorchZipFile file(path("params.pt"));
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "p");
  EXPECT_EQ(file.tensors()[1].name, "frozen");
  EXPECT_TRUE(torch::equal(file.load("p"), torch::arange(6, torch::kFloat).reshape({2, 3})));
  const at::Tensor frozen = file.load("frozen");
  EXPECT_EQ(frozen.scalar_type(), at::kDouble);
  EXPECT_TRUE(torch::equal(frozen, torch::full({2}, -1.5, torch::kDouble)));
}

TEST_F(TorchZipPython, NestedCheckpointIsFlattenedWithDottedNames) {
  TorchZipFile file(path("nested.pt"));
  std::vector<std::string> names;
  for (const TensorInfo& info : file.tensors()) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"model.weight", "model.bias", "history.0",
                                             "opt.state.0.exp_avg"}));
  EXPECT_TRUE(torch::equal(file.load("model.weight"), torch::tensor({{1.f, 2.f}, {3.f, 4.f}})));
  EXPECT_TRUE(torch::equal(file.load("model.bias"), torch::tensor({-1.f, 0.5f})));
  EXPECT_TRUE(torch::equal(file.load("history.0"), torch::tensor({7.f, 8.f})));
  EXPECT_TRUE(torch::equal(file.load("opt.state.0.exp_avg"), torch::ones({2})));
}

TEST_F(TorchZipPython, RefusesPickledCodeWithoutRunningIt) {
  fs::remove(marker_);
  const std::string evil = error_of([&] { TorchZipFile file(path("evil.pt")); });
  EXPECT_TRUE(Contains(evil, path("evil.pt") + ": refusing to load global \"posix.system\""));
  EXPECT_FALSE(fs::exists(marker_));
  // Protocol 2 spells the builtins module "__builtin__" (Python 2's name).
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("function.pt")); }),
                       "refusing to load global \"__builtin__.print\""));
}

TEST_F(TorchZipPython, NamesLegacyTorchScriptAndBareTensorFiles) {
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("legacy.pt")); }),
                       "legacy.pt: a legacy torch.save file"));
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("scripted.pt")); }),
                       "scripted.pt: a TorchScript archive (torch.jit.save)"));
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("bare_tensor.pt")); }),
                       "bare_tensor.pt: data.pkl holds a tensor, expected a dict of tensors"));
}

TEST_F(TorchZipPython, TruncatedRealFileIsAnError) {
  const std::string bytes = read_file(path("module.pt"));
  const fs::path cut = test::scratch_dir() / "module_cut.pt";
  for (std::size_t n : {bytes.size() - 1, bytes.size() - 22, bytes.size() / 2, std::size_t{64}}) {
    write_file(cut, bytes.substr(0, n));
    EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(cut.string()); }),
                         cut.string() + ": cannot read the zip archive"))
        << "cut at " << n;
  }
}

}  // namespace
}  // namespace poslens
