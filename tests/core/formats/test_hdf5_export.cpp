// Tests of the HDF5 export (core/hdf5_export.h): read back with the HDF5 C++ API and h5py.
#include "core/formats/hdf5_export.h"

#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

struct Example {
  std::vector<NamedCapture> captures;
  at::Tensor ids;
  std::vector<std::string> text;
  ExportMetadata meta;
};

Example make_example() {
  Example ex;
  const auto pattern = torch::arange(18, torch::kFloat).reshape({1, 2, 3, 3}) / 10.0;
  const auto logits = torch::arange(15, torch::kFloat).reshape({1, 3, 5}) - 7.0;
  ex.captures.push_back({"blocks.0.attn.hook_pattern", {"batch", "head", "q_pos", "k_pos"},
                         pattern});
  ex.captures.push_back({"logits", {"batch", "pos", "vocab"}, logits});
  ex.ids = torch::tensor({{1, 42, 7}}, torch::kLong);
  ex.text = {"<s>", "caf\xc3\xa9", " the"};  // "café": a non-ASCII token
  ex.meta.tool_version = "0.1.0";
  ex.meta.model_config_json = R"({"d_model":64,"n_heads":8})";
  ex.meta.checkpoint = "stories260K.bin";
  ex.meta.device = "cpu";
  ex.meta.dtype = "float32";
  return ex;
}

void write(const fs::path& path, const Example& ex) {
  write_captures_hdf5(path.string(), ex.captures, ex.ids, ex.text, ex.meta);
}

std::vector<hsize_t> shape_of(const H5::DataSet& ds) {
  const H5::DataSpace space = ds.getSpace();
  std::vector<hsize_t> dims(static_cast<std::size_t>(space.getSimpleExtentNdims()));
  space.getSimpleExtentDims(dims.data());
  return dims;
}

std::vector<std::string> read_string_array(const H5::H5Object& obj, bool attribute,
                                           const std::string& name = "") {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  std::vector<char*> raw;
  H5::DataSpace space;
  if (attribute) {
    const H5::Attribute attr = obj.openAttribute(name);
    space = attr.getSpace();
    raw.resize(static_cast<std::size_t>(space.getSimpleExtentNpoints()));
    attr.read(type, raw.data());
  } else {
    const auto& ds = dynamic_cast<const H5::DataSet&>(obj);
    space = ds.getSpace();
    raw.resize(static_cast<std::size_t>(space.getSimpleExtentNpoints()));
    ds.read(raw.data(), type);
  }
  std::vector<std::string> out(raw.begin(), raw.end());
  H5Dvlen_reclaim(type.getId(), space.getId(), H5P_DEFAULT, raw.data());
  return out;
}

std::string read_string_attribute(const H5::H5Object& obj, const std::string& name) {
  const H5::Attribute attr = obj.openAttribute(name);
  std::string value;
  attr.read(attr.getStrType(), value);
  return value;
}

std::vector<float> read_floats(const H5::DataSet& ds) {
  std::vector<float> v(static_cast<std::size_t>(ds.getSpace().getSimpleExtentNpoints()));
  ds.read(v.data(), H5::PredType::NATIVE_FLOAT);
  return v;
}

std::vector<float> to_vector(const at::Tensor& t) {
  const auto c = t.to(torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> folder_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

TEST(Hdf5Export, WritesCapturesTokensAndMetadata) {
  const auto dir = test::scratch_dir();
  const auto path = dir / "run.h5";
  const Example ex = make_example();
  write(path, ex);
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(folder_entries(dir), std::vector<std::string>{"run.h5"});  // no temp left

  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  const H5::Group caps = file.openGroup("captures");
  ASSERT_EQ(caps.getNumObjs(), 2u);
  // The full hook name is one dataset name, not a chain of groups.
  EXPECT_EQ(caps.childObjType("blocks.0.attn.hook_pattern"), H5O_TYPE_DATASET);

  const H5::DataSet pattern = file.openDataSet("/captures/blocks.0.attn.hook_pattern");
  EXPECT_EQ(pattern.getDataType(), H5::PredType::IEEE_F32LE);
  EXPECT_EQ(shape_of(pattern), (std::vector<hsize_t>{1, 2, 3, 3}));
  EXPECT_EQ(read_floats(pattern), to_vector(ex.captures[0].tensor));
  EXPECT_EQ(read_string_array(pattern, true, "dims"),
            (std::vector<std::string>{"batch", "head", "q_pos", "k_pos"}));

  const H5::DataSet logits = file.openDataSet("/captures/logits");
  EXPECT_EQ(shape_of(logits), (std::vector<hsize_t>{1, 3, 5}));
  EXPECT_EQ(read_floats(logits), to_vector(ex.captures[1].tensor));
  EXPECT_EQ(read_string_array(logits, true, "dims"),
            (std::vector<std::string>{"batch", "pos", "vocab"}));

  const H5::DataSet ids = file.openDataSet("/tokens/ids");
  EXPECT_EQ(ids.getDataType(), H5::PredType::STD_I64LE);
  EXPECT_EQ(shape_of(ids), (std::vector<hsize_t>{1, 3}));
  std::vector<int64_t> id_values(3);
  ids.read(id_values.data(), H5::PredType::NATIVE_INT64);
  EXPECT_EQ(id_values, (std::vector<int64_t>{1, 42, 7}));

  const H5::DataSet text = file.openDataSet("/tokens/text");
  EXPECT_EQ(shape_of(text), (std::vector<hsize_t>{1, 3}));
  EXPECT_EQ(text.getStrType().getCset(), H5T_CSET_UTF8);
  EXPECT_TRUE(text.getStrType().isVariableStr());
  EXPECT_EQ(read_string_array(text, false), ex.text);

  EXPECT_EQ(read_string_attribute(file, "poslens_version"), "0.1.0");
  EXPECT_EQ(read_string_attribute(file, "model_config"), ex.meta.model_config_json);
  EXPECT_EQ(read_string_attribute(file, "checkpoint"), "stories260K.bin");
  EXPECT_EQ(read_string_attribute(file, "device"), "cpu");
  EXPECT_EQ(read_string_attribute(file, "dtype"), "float32");
  EXPECT_EQ(file.openAttribute("dtype").getStrType().getCset(), H5T_CSET_UTF8);
}

TEST(Hdf5Export, Bfloat16IsWrittenAsFloat32) {
  const auto path = test::scratch_dir() / "bf16.h5";
  Example ex = make_example();
  ex.captures[0].tensor = ex.captures[0].tensor.to(torch::kBFloat16);
  write(path, ex);
  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  const H5::DataSet ds = file.openDataSet("/captures/blocks.0.attn.hook_pattern");
  EXPECT_EQ(ds.getDataType(), H5::PredType::IEEE_F32LE);
  EXPECT_EQ(read_floats(ds), to_vector(ex.captures[0].tensor));  // bf16 values, exactly
}

TEST(Hdf5Export, LargeDatasetIsChunkedAndCompressed) {
  const auto path = test::scratch_dir() / "big.h5";
  Example ex = make_example();
  ex.captures[0].tensor = torch::rand({1, 4, 256, 512});  // 2 MiB of float32
  write(path, ex);
  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  const H5::DataSet ds = file.openDataSet("/captures/blocks.0.attn.hook_pattern");
  const H5::DSetCreatPropList props = ds.getCreatePlist();
  ASSERT_EQ(props.getLayout(), H5D_CHUNKED);
  std::vector<hsize_t> chunk(4);
  props.getChunk(4, chunk.data());
  const auto dims = shape_of(ds);
  hsize_t bytes = 4;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GE(chunk[i], 1u);
    EXPECT_LE(chunk[i], dims[i]);
    bytes *= chunk[i];
  }
  EXPECT_LE(bytes, hsize_t{1} << 20);
  EXPECT_EQ(props.getNfilters(), 1);
  EXPECT_EQ(read_floats(ds), to_vector(ex.captures[0].tensor));
  // Small datasets stay contiguous.
  EXPECT_EQ(file.openDataSet("/captures/logits").getCreatePlist().getLayout(), H5D_CONTIGUOUS);
}

TEST(Hdf5Export, ZeroSizeDimensionWorks) {
  const auto path = test::scratch_dir() / "empty.h5";
  Example ex = make_example();
  ex.captures[1].tensor = torch::zeros({1, 0, 300000});
  write(path, ex);
  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  EXPECT_EQ(shape_of(file.openDataSet("/captures/logits")), (std::vector<hsize_t>{1, 0, 300000}));
}

TEST(Hdf5Export, MissingFolderIsAnErrorAndCreatesNothing) {
  const auto dir = test::scratch_dir();
  const auto path = dir / "no-such-folder" / "run.h5";
  try {
    write(path, make_example());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-folder"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "no-such-folder"));
  EXPECT_TRUE(folder_entries(dir).empty());
}

TEST(Hdf5Export, TokenTextCountMismatchLeavesNoFile) {
  const auto dir = test::scratch_dir();
  Example ex = make_example();
  ex.text.pop_back();
  try {
    write(dir / "run.h5", ex);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token text has 2 entries"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(folder_entries(dir).empty());  // neither run.h5 nor a .tmp file
}

TEST(Hdf5Export, BadInputsAreErrors) {
  const auto path = test::scratch_dir() / "run.h5";
  {
    Example ex = make_example();
    ex.ids = ex.ids.to(torch::kInt);
    EXPECT_THROW(write(path, ex), Error);
  }
  {
    Example ex = make_example();
    ex.ids = ex.ids.flatten();
    EXPECT_THROW(write(path, ex), Error);
  }
  {
    Example ex = make_example();
    ex.captures[0].dims.pop_back();
    EXPECT_THROW(write(path, ex), Error);
  }
  {
    Example ex = make_example();
    ex.captures[1].name = "blocks/0";
    EXPECT_THROW(write(path, ex), Error);
  }
  {
    Example ex = make_example();
    ex.captures[1].name = ex.captures[0].name;
    EXPECT_THROW(write(path, ex), Error);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Hdf5Export, FailingWriteLeavesExistingFileUntouched) {
  const auto dir = test::scratch_dir();
  const auto path = dir / "run.h5";
  write(path, make_example());
  const std::string before = read_all(path);
  ASSERT_FALSE(before.empty());

  // Input errors (a failure inside HDF5 is covered by HdfFailureIsTranslatedAndTempRemoved).
  Example bad = make_example();
  bad.ids = bad.ids.to(torch::kInt);  // a validation failure
  EXPECT_THROW(write(path, bad), Error);
  EXPECT_EQ(read_all(path), before);

  Example late = make_example();
  late.text.push_back("extra");
  EXPECT_THROW(write(path, late), Error);
  EXPECT_EQ(read_all(path), before);
  EXPECT_EQ(folder_entries(dir), std::vector<std::string>{"run.h5"});
}

TEST(Hdf5Export, HdfFailureIsTranslatedAndTempRemoved) {
  // The same attribute twice on a group passes validation and fails inside HDF5.
  const auto dir = test::scratch_dir();
  const auto path = dir / "run.h5";
  write(path, make_example());
  const std::string before = read_all(path);
  const Hdf5Attribute twice{"note", std::string("x")};
  try {
    write_analysis_hdf5(path.string(), {{"/a/b", torch::ones({2}), {}, {"i"}, {}}},
                        {{"/a", {twice, twice}}}, {}, {}, {});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("creating attribute 'note'"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_all(path), before);
  EXPECT_EQ(folder_entries(dir), std::vector<std::string>{"run.h5"});  // no temporary left
}

bool have_h5py() {
  return std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") == 0;
}

TEST(Hdf5Export, ReadableWithH5py) {
  if (!have_h5py()) POSLENS_MISSING_PREREQUISITE("h5py not available to /usr/bin/python3");
  const auto dir = test::scratch_dir();
  const auto path = dir / "run.h5";
  write(path, make_example());
  const auto script = dir / "read.py";
  {
    std::ofstream py(script);
    py << "import sys, json, h5py\n"
          "with h5py.File(sys.argv[1], 'r') as f:\n"
          "    p = f['captures/blocks.0.attn.hook_pattern']\n"
          "    text = [t.decode('utf-8') for t in f['tokens/text'][0]]\n"
          "    print(json.dumps({'shape': list(p.shape), 'v': float(p[0, 1, 2, 0]),\n"
          "                      'dims': [str(d) for d in p.attrs['dims']],\n"
          "                      'text': text, 'version': f.attrs['poslens_version']}))\n";
  }
  const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + path.string() + "'";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  ASSERT_EQ(::pclose(pipe), 0) << out;
  // json.dumps escapes non-ASCII: "caf\u00e9".
  EXPECT_NE(out.find("\"shape\": [1, 2, 3, 3]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"v\": 1.5"), std::string::npos) << out;
  EXPECT_NE(out.find("\"dims\": [\"batch\", \"head\", \"q_pos\", \"k_pos\"]"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"text\": [\"<s>\", \"caf\\u00e9\", \" the\"]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"version\": \"0.1.0\""), std::string::npos) << out;
}

TEST(Hdf5Analysis, DatasetsKeepTheirTypesWithGroupsAndAttributes) {
  const auto path = (test::scratch_dir() / "analysis.h5").string();
  std::vector<Hdf5Dataset> datasets = {
      {"/analysis/probe/theta", torch::tensor({1.0, 0.1}, torch::kDouble), {}, {"component"}, {}},
      {"/analysis/probe/steps", torch::tensor({0, 150}, torch::kLong), {}, {"checkpoint"}, {}},
      {"/analysis/probe/activated", torch::tensor({false, true}), {}, {"component"}, {}},
      {"/analysis/probe/scores", torch::ones({2, 3}, torch::kBFloat16), {}, {"head", "key_pos"},
       {{"unit", std::string("logit")}}},
      {"/analysis/names", {}, {"a", "b"}, {"checkpoint"}, {}},
  };
  write_analysis_hdf5(path, datasets, {{"/analysis/probe", {{"T", int64_t{32}}, {"x", 0.5}}}},
                      {}, {}, ExportMetadata{"v", "{}", "ckpt", "cpu", "float32"});
  H5::H5File file(path, H5F_ACC_RDONLY);
  EXPECT_EQ(file.openDataSet("/analysis/probe/theta").getDataType(), H5::PredType::IEEE_F64LE);
  EXPECT_EQ(file.openDataSet("/analysis/probe/steps").getDataType(), H5::PredType::STD_I64LE);
  EXPECT_EQ(file.openDataSet("/analysis/probe/activated").getDataType(), H5::PredType::STD_U8LE);
  EXPECT_EQ(file.openDataSet("/analysis/probe/scores").getDataType(), H5::PredType::IEEE_F32LE);
  double theta[2];
  file.openDataSet("/analysis/probe/theta").read(theta, H5::PredType::NATIVE_DOUBLE);
  EXPECT_EQ(theta[1], 0.1);
  int64_t T = 0;
  file.openGroup("/analysis/probe").openAttribute("T").read(H5::PredType::NATIVE_INT64, &T);
  EXPECT_EQ(T, 32);
  EXPECT_TRUE(file.openDataSet("/analysis/probe/scores").attrExists("unit"));
  EXPECT_TRUE(file.openDataSet("/analysis/names").attrExists("dims"));
  EXPECT_FALSE(file.nameExists("/tokens"));
}

TEST(Hdf5Analysis, BadLayoutsAreErrorsBeforeAnyFile) {
  const auto dir = test::scratch_dir();
  const auto path = (dir / "bad.h5").string();
  const ExportMetadata meta;
  const auto one = torch::ones({2});
  const auto error = [&](std::vector<Hdf5Dataset> d,
                         std::vector<std::pair<std::string, std::vector<Hdf5Attribute>>> g = {}) {
    return test::error_of([&] { write_analysis_hdf5(path, d, g, {}, {}, meta); });
  };
  EXPECT_NE(error({{"analysis/x", one, {}, {"a"}, {}}}).find("must start with '/'"), std::string::npos);
  EXPECT_NE(error({{"/a//x", one, {}, {"a"}, {}}}).find("empty path component"), std::string::npos);
  EXPECT_NE(error({{"/a/x", one, {}, {"a"}, {}}, {"/a/x", one, {}, {"a"}, {}}}).find("appears twice"),
            std::string::npos);
  EXPECT_NE(error({{"/a", one, {}, {"a"}, {}}, {"/a/x", one, {}, {"a"}, {}}}).find("both a dataset and a group"),
            std::string::npos);
  EXPECT_NE(error({{"/a/x", one, {}, {"a", "b"}, {}}}).find("2 dimension names"), std::string::npos);
  EXPECT_NE(error({{"/a/x", one, {}, {"a"}, {}}}, {{"/b", {}}}).find("holds no dataset"), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace poslens
