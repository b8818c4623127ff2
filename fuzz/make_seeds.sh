#!/usr/bin/env bash
# Seed corpora for the libFuzzer targets (fuzz/CMakeLists.txt), one folder per target:
#   build-fuzz/corpus/<target>/seed-*
# The fuzzer adds its own inputs to the same folders (scripts/fuzz.sh); seeds are rewritten
# each run (old seed-* files removed first), everything else is kept.
#
# Sources, all real files where they exist:
#   ../shared/fixtures        stories260K.bin (cut: > 1 MB), tok512.bin, the gpt2 / mistral /
#                             llama2 / tiny-spm tokenizers (large JSON vocabularies are reduced
#                             to their first ids so that the seeds stay small and valid)
#   tests/data                small HF / TransformerLens checkpoints (config.json, safetensors,
#                             nanoGPT ckpt.pt = torch.save zip), tokenizer.json / .model files
#   resources/demos           PosLens-format models (config.json, safetensors, tokenizer.json)
#   the hostile-file tests    tests/core/formats/test_{safetensors,torch_zip,llama2c}.cpp and
#                             tests/core/tokenizers/test_*hostile*.cpp build their hostile
#                             inputs in code (no files to copy): the interesting ones are
#                             rebuilt here (header-length lies, overlapping ranges, os.system /
#                             builtins.eval pickles, self-containing and exploding dicts, ...)
#   poslens-cli               small analysis HDF5 files, written by the main build's
#                             build/app/cli/poslens-cli on stories260K (run, not rebuilt;
#                             skipped with a note when it is missing)
#
# Usage: fuzz/make_seeds.sh [BUILD_DIR]   (default build-fuzz). Needs python3 (stdlib only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-fuzz}"
FIXTURES="${POSLENS_FIXTURES_DIR:-$ROOT/../shared/fixtures}"
CLI="${POSLENS_CLI:-$ROOT/build/app/cli/poslens-cli}"
CORPUS="$BUILD/corpus"
mkdir -p "$CORPUS"
[ -d "$FIXTURES" ] || echo "make_seeds: no fixtures at $FIXTURES (seeds from tests/data and demos only)" >&2

# -------------------------------------------------------------------------------------------
# Everything that is file manipulation: Python's standard library (json, struct, zipfile).
python3 - "$ROOT" "$FIXTURES" "$CORPUS" <<'PY'
import json, os, struct, sys, zipfile, io, glob

root, fixtures, corpus = sys.argv[1:4]
# Each target's -max_len (keep in sync with scripts/fuzz.sh): libFuzzer would cut a larger seed
# to this length, which only makes it an invalid file; such seeds are skipped (noted).
KiB = 1024
MAX_LEN = {
    "fuzz_safetensors_header": 1024 * KiB, "fuzz_safetensors_index": 64 * KiB,
    "fuzz_torch_zip": 1024 * KiB, "fuzz_unpickler": 1024 * KiB,
    "fuzz_llama2c_bin": 1024 * KiB, "fuzz_llama2c_tokenizer": 512 * KiB,
    "fuzz_config_json": 64 * KiB, "fuzz_poslens_config": 64 * KiB,
    "fuzz_tokenizer_json": 64 * KiB, "fuzz_sentencepiece_model": 64 * KiB,
    "fuzz_vocab_merges": 64 * KiB, "fuzz_analysis_hdf5": 128 * KiB,
}

# Seeds are rewritten on every run: old ones first go (a renamed or dropped seed must not stay
# behind), except the analysis files, which the shell part below rewrites when it can run the CLI.
for target in MAX_LEN:
    if target != "fuzz_analysis_hdf5":
        for old in glob.glob(os.path.join(corpus, target, "seed-*")):
            os.remove(old)

def out(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_LEN[target]:
        print(f"make_seeds: skipped {target}/{name}: {len(data)} bytes > max_len {MAX_LEN[target]}",
              file=sys.stderr)
        return
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)

def read(path):
    with open(path, "rb") as f:
        return f.read()

def exists(path):
    return os.path.isfile(path)

def rel(path):
    return os.path.relpath(path, root).replace("/", "_").replace("..", "up")

# --- safetensors ----------------------------------------------------------------------------
def st_bytes(header, data=b"", pad=True):
    h = header.encode() if isinstance(header, str) else header
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data

def reduce_safetensors(blob, limit=16384):
    """The tensors of `blob` whose data lies in its first `limit` bytes, still a valid file."""
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    keep, end = {}, 0
    for k, v in header.items():
        if k == "__metadata__":
            keep[k] = v
        elif v["data_offsets"][1] <= limit:
            keep[k] = v
            end = max(end, v["data_offsets"][1])
    return st_bytes(json.dumps(keep, separators=(",", ":")), blob[8 + n:8 + n + end])

st_files = sorted(glob.glob(os.path.join(root, "tests/data/models/*/*.safetensors")) +
                  glob.glob(os.path.join(root, "resources/demos/*/model.safetensors")) +
                  glob.glob(os.path.join(root, "resources/demos/text-rope-series/step-000000/model.safetensors")))
for p in st_files:
    blob = read(p)
    out("fuzz_safetensors_header", rel(p) + ".reduced", reduce_safetensors(blob))
    if len(blob) <= 64 * 1024:
        out("fuzz_safetensors_header", rel(p), blob)
T = "fuzz_safetensors_header"
out(T, "spec", st_bytes('{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                        '"a":{"dtype":"I8","shape":[1,3],"data_offsets":[8,11]},"__metadata__":{"k":"v"}}',
                        bytes(range(11))))
out(T, "misaligned", st_bytes('{"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                              '"f":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}', bytes(9)))
out(T, "zero-and-scalar", st_bytes('{"e":{"dtype":"BF16","shape":[3,0],"data_offsets":[0,0]},'
                                   '"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}', bytes(8)))
out(T, "all-dtypes", st_bytes(json.dumps({d: {"dtype": d, "shape": [1], "data_offsets": [8 * i, 8 * i + s]}
                                          for i, (d, s) in enumerate([("F32", 4), ("F16", 2), ("BF16", 2), ("F64", 8),
                                                                      ("I64", 8), ("I32", 4), ("I16", 2), ("I8", 1),
                                                                      ("U8", 1), ("BOOL", 1)])}), bytes(80)))
out(T, "truncated-4", b"\x10\x00\x00\x00")
out(T, "header-longer-than-file", struct.pack("<Q", 1000) + b"{}")
out(T, "header-2e62", struct.pack("<Q", 1 << 62) + b"{}")
out(T, "invalid-json", st_bytes('{"a": {"dtype": '))
out(T, "array", st_bytes("[1, 2]"))
out(T, "negative-dim", st_bytes('{"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}}', bytes(24)))
out(T, "shape-overflow", st_bytes('{"w":{"dtype":"U8","shape":[0,4611686018427387904,4611686018427387904],'
                                  '"data_offsets":[0,0]}}'))
out(T, "span-mismatch", st_bytes('{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}', bytes(24)))
out(T, "offset-u64max", st_bytes('{"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,0]}}'))
out(T, "overlap", st_bytes('{"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]},'
                           '"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', bytes(24)))
out(T, "metadata-int", st_bytes('{"__metadata__":{"format":"pt","step":100}}'))
out(T, "duplicate", st_bytes('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                             '"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"ab"))
out(T, "deep", st_bytes('{"w":' + "[" * 40 + "]" * 40 + "}"))

T = "fuzz_safetensors_index"
shards = {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
          "c": "model-00002-of-00002.safetensors", "d": "model-00002-of-00002.safetensors"}
out(T, "two-shards", json.dumps({"metadata": {"total_size": 96}, "weight_map": shards}, indent=2))
out(T, "one-shard", json.dumps({"weight_map": {"b": "model-00001-of-00002.safetensors"}}))
out(T, "parent-dir", json.dumps({"weight_map": {"a": "../model-00001-of-00002.safetensors"}}))
out(T, "missing-tensor", json.dumps({"weight_map": {"x": "model-00002-of-00002.safetensors"}}))
out(T, "missing-shard", json.dumps({"weight_map": {"a": "absent.safetensors"}}))
out(T, "no-weight-map", json.dumps({"metadata": {}}))
out(T, "itself", json.dumps({"weight_map": {"a": "model.safetensors.index.json"}}))
out(T, "non-string", json.dumps({"weight_map": {"a": 1, "b": None}}))

# --- pickles and torch.save zips --------------------------------------------------------------
class Pickle:
    """Opcode by opcode, as tests/torch_zip_archives.h's Pickle."""
    def __init__(self): self.b = bytearray(b"\x80\x02")
    def op(self, *codes):
        for c in codes: self.b += bytes([c]) if isinstance(c, int) else c.encode("latin-1")
        return self
    def raw(self, s): self.b += s if isinstance(s, bytes) else s.encode(); return self
    def glob(self, m, n): return self.op("c").raw(m + "\n" + n + "\n")
    def str(self, s): s = s.encode(); self.op("X"); self.b += struct.pack("<I", len(s)); return self.raw(s)
    def int(self, v): self.op(0x8a, 8); self.b += struct.pack("<q", v); return self
    def ints(self, vs):
        self.op("(")
        for v in vs: self.int(v)
        return self.op("t")
    def tensor(self, storage, key, numel, offset, size, stride):
        self.glob("torch._utils", "_rebuild_tensor_v2").op("(")
        self.op("(").str("storage").glob("torch", storage).str(key).str("cpu").int(numel).op("t")
        self.op("Q").int(offset).ints(size).ints(stride).op(0x89)
        self.glob("collections", "OrderedDict").op(")", "R")
        return self.op("t", "R")
    def done(self): return bytes(self.b) + b"."

pickles = {
    "one-tensor": Pickle().op("}").str("w").tensor("FloatStorage", "0", 6, 0, [2, 3], [3, 1]).op("s").done(),
    "transposed": Pickle().op("}").str("t").tensor("FloatStorage", "0", 6, 0, [3, 2], [1, 3]).op("s").done(),
    "offset-view": Pickle().op("}").str("v").tensor("FloatStorage", "0", 6, 2, [2, 2], [2, 1]).op("s").done(),
    "tied": Pickle().op("}", "(").str("a").tensor("FloatStorage", "0", 6, 0, [6], [1])
            .str("b").tensor("FloatStorage", "0", 6, 0, [2, 3], [3, 1]).op("u").done(),
    "dtypes": Pickle().op("}", "(").str("h").tensor("HalfStorage", "0", 12, 0, [12], [1])
              .str("l").tensor("LongStorage", "1", 3, 0, [3], [1])
              .str("b").tensor("BoolStorage", "2", 24, 0, [4, 6], [6, 1]).op("u").done(),
    "parameter": Pickle().op("}").str("p").glob("torch._utils", "_rebuild_parameter")
                 .op("(").tensor("FloatStorage", "0", 6, 0, [6], [1]).op(0x88)
                 .glob("collections", "OrderedDict").op(")", "R", "t", "R", "s").done(),
    "nested-scalars": Pickle().op("}", "(").str("model").op("}").str("w")
                      .tensor("FloatStorage", "0", 6, 0, [6], [1]).op("s")
                      .str("model_args").op("}", "(").str("n_layer").op("K", 2).str("n_embd").op("K", 16)
                      .str("n_head").op("K", 2).str("vocab_size").op("K", 50).str("block_size").op("K", 32)
                      .str("bias").op(0x89).op("u").str("iter_num").op("M", 0, 1).str("loss").op("G")
                      .raw(struct.pack(">d", 1.5)).op("u").done(),
    "os-system": Pickle().glob("os", "system").str("true").op(0x85, "R").done(),
    "builtins-eval": Pickle().str("builtins").str("eval").op(0x93, "(").str("1+1").op("t", "R").done(),
    "complex-storage": Pickle().op("}").str("z").tensor("ComplexFloatStorage", "0", 6, 0, [6], [1]).op("s").done(),
    "string-opcode": Pickle().raw("S'x'\n").done(),
    "unknown-opcode": Pickle().op("}", 0xff).done(),
    "truncated": bytes(Pickle().op("}").b),
    "huge-string": Pickle().raw(b"X\xff\xff\xff\x7fabc").done(),
    "memo": Pickle().op("}", "q", 0).str("self").op("h", 0, "s").done(),  # d["self"] = d
    "stack-global-ok": Pickle().str("collections").str("OrderedDict").op(0x93, ")", "R", 0x94).done(),
    "build-metadata": Pickle().glob("collections", "OrderedDict").op(")", "R", "}", "b").done(),
    "frame-proto4": b"\x80\x04\x95\x08\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.",
}
p = Pickle().op("}").str("junk").op("]").op("}", "r").raw(bytes(4)).op("a")  # exploding dicts
for i in range(1, 26):
    le = lambda v: struct.pack("<I", v)
    p.op("}").str("a").op("j").raw(le(i - 1)).op("s").str("b").op("j").raw(le(i - 1)).op("s").op("r").raw(le(i)).op("a")
pickles["exploding"] = p.op("s").done()

def zip_archive(records, name="archive", version=b"3\n", byteorder=b"little"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}/data.pkl", records.pop("data.pkl"))
        if byteorder is not None:
            z.writestr(f"{name}/byteorder", byteorder)
        for k, v in records.items():
            z.writestr(f"{name}/{k}", v)
        if version is not None:
            z.writestr(f"{name}/version", version)
    return buf.getvalue()

for name, pkl in pickles.items():
    out("fuzz_unpickler", name, pkl)
    # wrap mode: the harness builds the archive. Not "exploding": 10 million container visits
    # before the reader gives up take > 10 s under ASan (a finding of its own), every time a
    # fuzzing job loads the seed.
    if name != "exploding":
        out("fuzz_torch_zip", "pkl-" + name, pkl)
floats = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
out("fuzz_torch_zip", "zip-one-tensor", zip_archive({"data.pkl": pickles["one-tensor"], "data/0": floats}))
out("fuzz_torch_zip", "zip-big-endian", zip_archive({"data.pkl": pickles["one-tensor"], "data/0": floats}, byteorder=b"big"))
out("fuzz_torch_zip", "zip-no-version", zip_archive({"data.pkl": pickles["one-tensor"], "data/0": floats}, version=None))
out("fuzz_torch_zip", "zip-short-record", zip_archive({"data.pkl": pickles["one-tensor"], "data/0": floats[:20]}))
out("fuzz_torch_zip", "zip-torchscript", zip_archive({"data.pkl": pickles["one-tensor"], "constants.pkl": b"\x80\x02)."}))
for p in sorted(glob.glob(os.path.join(root, "tests/data/models/*/ckpt.pt"))):
    blob = read(p)
    out("fuzz_torch_zip", rel(p), blob)
    with zipfile.ZipFile(p) as z:
        for info in z.infolist():
            if info.filename.endswith("/data.pkl"):
                pkl = z.read(info)
                out("fuzz_torch_zip", rel(p) + ".data.pkl", pkl)
                out("fuzz_unpickler", rel(p) + ".data.pkl", pkl)
out("fuzz_torch_zip", "legacy-pickle", b"\x80\x02\x8a\x0alZ\xfc\x9ch\x81\x9e\x03.")
out("fuzz_torch_zip", "empty", b"")

# --- llama2.c .bin ----------------------------------------------------------------------------
def llama2c(dim, hidden, layers, heads, kv, vocab, seq, shared=True):
    kv_dim = dim * kv // heads
    d_head = dim // heads
    n = (vocab * dim + layers * (dim + dim * dim + 2 * kv_dim * dim + dim * dim + dim + 3 * hidden * dim)
         + dim + 2 * seq * (d_head // 2) + (0 if shared else vocab * dim))
    header = struct.pack("<7i", dim, hidden, layers, heads, kv, vocab if shared else -vocab, seq)
    return header + struct.pack(f"<{n}f", *[((i * 7919) % 1000) / 1000.0 - 0.5 for i in range(n)])

T = "fuzz_llama2c_bin"
out(T, "tiny-shared", llama2c(8, 12, 1, 2, 1, 8, 4))
out(T, "tiny-unshared", llama2c(8, 12, 2, 4, 2, -0 + 6, 3, shared=False))
out(T, "mha", llama2c(16, 24, 1, 2, 2, 10, 8))
out(T, "v1-magic", b"ak42" + bytes(60))
out(T, "header-only", struct.pack("<7i", 64, 172, 5, 8, 4, 512, 512))
out(T, "zero-field", struct.pack("<7i", 64, 0, 5, 8, 4, 512, 512))
out(T, "int-min-vocab", struct.pack("<7i", 64, 172, 5, 8, 4, -2**31, 512))
out(T, "overflow", struct.pack("<7i", 1 << 20, 1 << 20, 1 << 20, 1 << 10, 1 << 10, 1 << 20, 1 << 20))
stories = os.path.join(fixtures, "stories260K/stories260K.bin")
if exists(stories):
    blob = read(stories)
    out(T, "stories260K.head", blob[:28 + 4096])  # > 1 MiB whole: the header and a little data

# --- llama2.c tokenizer.bin: 2-byte vocab_size, then the file ----------------------------------
def tok_bin(pieces, max_len=None):
    max_len = max_len or max(1, max(len(p) for p, _ in pieces))
    b = struct.pack("<i", max_len)
    for p, s in pieces:
        b += struct.pack("<fi", s, len(p)) + p
    return b

T = "fuzz_llama2c_tokenizer"
tok512 = os.path.join(fixtures, "stories260K/tok512.bin")
if exists(tok512):
    out(T, "tok512", struct.pack("<H", 512) + read(tok512))
    out(T, "tok512-vocab300", struct.pack("<H", 300) + read(tok512))
byte_pieces = [(b"<unk>", 0.0), (b"\n<s>\n", 0.0), (b"\n</s>\n", 0.0)] + \
              [(("<0x%02X>" % i).encode(), 0.0) for i in range(256)]
merges = [(b" ", -1.0), (b"a", -2.0), (b"b", -3.0), (b"ab", -0.5), (b" a", -0.7), (b" ab", -0.1),
          (b"\xc3\xa9", -4.0), (b"\xe6\x97\xa5", -5.0)]
small = byte_pieces + merges
out(T, "bytes-and-merges", struct.pack("<H", len(small)) + tok_bin(small))
out(T, "three", struct.pack("<H", 3) + tok_bin(byte_pieces[:3]))
out(T, "truncated", struct.pack("<H", 10) + tok_bin(small)[:40])
out(T, "negative-length", struct.pack("<H", 4) + struct.pack("<ifi", 8, 0.0, -1))

# --- config.json of every architecture --------------------------------------------------------
T = "fuzz_config_json"
for p in sorted(glob.glob(os.path.join(root, "tests/data/models/*/config.json")) +
                glob.glob(os.path.join(root, "tests/data/models/*/hooked_transformer_config.json")) +
                glob.glob(os.path.join(root, "resources/demos/*/config.json"))):
    out(T, rel(p), read(p))
llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 48, "vocab_size": 40, "rms_norm_eps": 1e-5, "rope_theta": 500.0,
         "max_position_embeddings": 64, "tie_word_embeddings": False, "bos_token_id": 1,
         "hidden_act": "silu", "rope_scaling": None}
configs = {
    "llama": llama,
    "llama-no-architectures": {k: v for k, v in llama.items() if k != "architectures"},
    "mistral": dict(llama, architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=16),
    "qwen2": dict(llama, architectures=["Qwen2ForCausalLM"], model_type="qwen2", attention_bias=True),
    "llama-linear": dict(llama, rope_scaling={"rope_type": "linear", "factor": 4.0}),
    "llama-dynamic": dict(llama, rope_scaling={"type": "dynamic", "factor": 2.0}),
    "llama-yarn": dict(llama, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                            "original_max_position_embeddings": 32, "beta_fast": 32, "beta_slow": 1}),
    "llama3": dict(llama, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
    "longrope": dict(llama, rope_scaling={"rope_type": "longrope", "short_factor": [1.0] * 4,
                                          "long_factor": [2.0] * 4, "original_max_position_embeddings": 32}),
    "gpt2": {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 16, "n_layer": 2,
             "n_head": 2, "n_positions": 32, "vocab_size": 50, "layer_norm_epsilon": 1e-5,
             "activation_function": "gelu_new", "n_inner": None},
    "neox": {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 32,
             "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 40,
             "rotary_pct": 0.25, "rotary_emb_base": 500, "max_position_embeddings": 64,
             "layer_norm_eps": 1e-5, "hidden_act": "gelu", "tie_word_embeddings": False,
             "bos_token_id": 0, "use_parallel_residual": True},
    "phi": {"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": 32,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "intermediate_size": 48, "vocab_size": 40, "partial_rotary_factor": 0.5, "rope_theta": 1000.0,
            "hidden_act": "gelu_new", "layer_norm_eps": 1e-5, "max_position_embeddings": 64,
            "qk_layernorm": False, "rope_scaling": None, "tie_word_embeddings": False, "bos_token_id": 1},
    "gemma": {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 32,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
              "intermediate_size": 48, "vocab_size": 40, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "max_position_embeddings": 64, "hidden_act": "gelu",
              "hidden_activation": "gelu_pytorch_tanh", "attention_bias": False,
              "tie_word_embeddings": True, "bos_token_id": 2},
    "olmo": {"architectures": ["OlmoForCausalLM"], "model_type": "olmo", "hidden_size": 32,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 48, "vocab_size": 40, "hidden_act": "silu", "rope_theta": 10000.0,
             "max_position_embeddings": 64, "attention_bias": False, "clip_qkv": None,
             "tie_word_embeddings": False, "bos_token_id": None},
    "gemma2-unsupported": {"architectures": ["Gemma2ForCausalLM"]},
    "nothing": {},
}
for name, c in configs.items():
    out(T, name, json.dumps(c, indent=1))

# --- PosLens config -------------------------------------------------------------------------
T = "fuzz_poslens_config"
for p in sorted(glob.glob(os.path.join(root, "resources/demos/*/config.json")) +
                glob.glob(os.path.join(root, "resources/demos/text-rope-series/step-00000*/config.json")) +
                glob.glob(os.path.join(root, "resources/demos/configs/*.json"))):
    out(T, rel(p), read(p))
base = '{"model_type": "poslens", "d_model": 16, "n_layers": 2, "n_heads": 4, "d_mlp": 32, "vocab_size": 20, "n_ctx": 32, '
for name, pe in {
    "nope": "[]", "alibi": '[{"type": "alibi"}]',
    "rope-cope": '[{"type": "rope", "pairing": "interleaved"}, {"type": "cope", "npos_max": 6}]',
    "shaw": '[{"type": "shaw", "max_distance": 3, "values": true, "shared": true}]',
    "heinsen": '[{"type": "heinsen", "d_pe": 3}]', "t5": '[{"type": "t5", "num_buckets": 8, "max_distance": 16}]',
    "kerple": '[{"type": "kerple", "variant": "power"}]', "fire": '[{"type": "fire"}]', "hope": '[{"type": "hope"}]',
    "sinusoidal": '[{"type": "sinusoidal"}]', "learned": '[{"type": "learned_absolute"}]',
    "transformer_xl": '[{"type": "transformer_xl"}]', "unknown": '[{"type": "rotary"}]',
    "rope-dim3": '[{"type": "rope", "rotary_dim": 3}]',
}.items():
    out(T, name, base + '"position_encoding": ' + pe + "}")

# --- tokenizers -------------------------------------------------------------------------------
def reduce_bpe_json(tok, n):
    """A tokenizer.json with the BPE vocabulary cut to ids < n (+ added tokens) and the merges
    whose parts and result are left: still a valid file of the same kind."""
    m = tok["model"]
    vocab = {k: v for k, v in m["vocab"].items() if v < n}
    merges = []
    for mg in m.get("merges", []):
        a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(mg)
    m["vocab"], m["merges"] = vocab, merges
    tok["added_tokens"] = [t for t in tok.get("added_tokens", []) if t["id"] < n or t["content"] in ("<|endoftext|>",)]
    return tok

T = "fuzz_tokenizer_json"
for p in sorted(set(glob.glob(os.path.join(root, "resources/demos/*/tokenizer.json")))):
    out(T, rel(p), read(p))
# Real files, their vocabularies cut to the first ids (the full ones are 40 KB - 1.8 MB: slow to
# mutate, and over max_len). T5's precompiled charsmap alone is ~240 KB: its reduced copy keeps
# the charsmap of unigram_tiny_charsmap.json instead.
def cut_vocab(tok, n):
    m = tok["model"]
    if isinstance(m.get("vocab"), list):  # Unigram: [[piece, score], ...]
        m["vocab"] = m["vocab"][:n]
        if isinstance(m.get("unk_id"), int) and m["unk_id"] >= n:
            m["unk_id"] = 0
    elif m.get("type") == "BPE":
        reduce_bpe_json(tok, n)
        return tok
    else:  # WordPiece / WordLevel: {piece: id}
        m["vocab"] = {k: v for k, v in m["vocab"].items() if v < n}
    tok["added_tokens"] = [t for t in tok.get("added_tokens", []) if t["id"] < n]
    return tok

tiny_charsmap = None  # a small real precompiled charsmap (darts-clone trie), from the tests' data
p = os.path.join(root, "tests/data/tokenizers/unigram_tiny_charsmap.json")
if exists(p):
    tiny_charsmap = {"type": "Precompiled",
                     "precompiled_charsmap": json.loads(read(p))["precompiled_charsmap"]}
for name in ["bert_cased_tokenizer.json", "bert_uncased_tokenizer.json", "t5_unigram_tokenizer.json"]:
    p = os.path.join(root, "tests/data/tokenizers", name)
    if exists(p):
        tok = cut_vocab(json.loads(read(p)), 400)
        if name.startswith("t5") and tiny_charsmap is not None:
            tok["normalizer"] = tiny_charsmap
        out(T, name + ".first400", json.dumps(tok))
for name in ["gpt2", "mistral"]:
    p = os.path.join(fixtures, "tokenizers", name, "tokenizer.json")
    if exists(p):
        tok = json.loads(read(p))
        for n in (300, 1000):
            out(T, f"{name}-first{n}.json", json.dumps(reduce_bpe_json(json.loads(json.dumps(tok)), n)))
small_bpe = {"version": "1.0", "truncation": None, "padding": None,
             "added_tokens": [{"id": 0, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                               "normalized": False, "special": True}],
             "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
             "model": {"type": "BPE", "dropout": None, "unk_token": None,
                       "vocab": {"<s>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]},
             "post_processor": None, "decoder": None}
small_wordpiece = {"version": "1.0", "truncation": None, "padding": None,
                   "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": False, "lstrip": False,
                                     "rstrip": False, "normalized": False, "special": True}],
                   "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                  "strip_accents": None, "lowercase": True},
                   "pre_tokenizer": {"type": "BertPreTokenizer"},
                   "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                             "max_input_chars_per_word": 100,
                             "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "a": 4}},
                   "post_processor": None, "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True}}
small_unigram = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                 "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
                 "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": False,
                           "vocab": [["<unk>", 0.0], ["a", -1.5], ["b", -2.0], ["ab", -2.5]]},
                 "post_processor": None, "decoder": None}
out(T, "small-bpe", json.dumps(small_bpe))
out(T, "small-wordpiece", json.dumps(small_wordpiece))
out(T, "small-unigram", json.dumps(small_unigram))
if tiny_charsmap is not None:
    out(T, "small-unigram-charsmap", json.dumps(dict(small_unigram, normalizer=tiny_charsmap)))
split = json.loads(json.dumps(small_bpe))
split["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(\\p{L}+|\\s+)"}, "behavior": "Isolated", "invert": False}
out(T, "split-regex", json.dumps(split))
seq = json.loads(json.dumps(small_bpe))
seq["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"},
                                                         {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
seq["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                  {"Sequence": {"id": "A", "type_id": 0}}],
                         "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}}
seq["decoder"] = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                   {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
out(T, "sequence-components", json.dumps(seq))
wordlevel = {"version": "1.0", "added_tokens": [{"id": 0, "content": "<bos>", "special": True}],
             "pre_tokenizer": {"type": "WhitespaceSplit"},
             "model": {"type": "WordLevel", "vocab": {"<bos>": 0, "one": 1, "two": 2}, "unk_token": None},
             "decoder": None}
out(T, "wordlevel", json.dumps(wordlevel))

T = "fuzz_sentencepiece_model"
for p in sorted(glob.glob(os.path.join(root, "tests/data/tokenizers/*.model")) +
                glob.glob(os.path.join(fixtures, "tokenizers/*/tokenizer.model"))):
    out(T, rel(p) if p.startswith(root) else "fixture-" + os.path.basename(os.path.dirname(p)) + ".model", read(p))
# (the fixtures' llama2 500 KB and tiny-spm 250 KB models exceed max_len: skipped with a note)
out(T, "empty", b"")
out(T, "one-unknown-piece", b"\x0a\x09\x0a\x05<unk>\x18\x02")  # pieces { piece: "<unk>" type: UNKNOWN }

T = "fuzz_vocab_merges"
vocab_p = os.path.join(fixtures, "tokenizers/gpt2/vocab.json")
merges_p = os.path.join(fixtures, "tokenizers/gpt2/merges.txt")
if exists(vocab_p) and exists(merges_p):
    vocab = json.loads(read(vocab_p))
    lines = read(merges_p).decode().split("\n")
    for n in (300, 1500):
        v = {k: i for k, i in vocab.items() if i < n}
        kept = [lines[0]] + [l for l in lines[1:] if l and len(l.split(" ")) == 2 and
                             all(x in v for x in l.split(" ")) and "".join(l.split(" ")) in v]
        out(T, f"gpt2-first{n}", json.dumps(v).encode() + b"\0" + "\n".join(kept).encode() + b"\n")
out(T, "tiny", json.dumps({"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120a": 4}).encode() + "\0#version: 0.2\na b\n\u0120 a\n".encode())
out(T, "crlf", json.dumps({"a": 0, "b": 1, "ab": 2}).encode() + b"\0a b\r\n")
out(T, "bad-line", json.dumps({"a": 0, "b": 1}).encode() + b"\0a b c\n")
out(T, "no-merges", json.dumps({"a": 0}).encode())
PY

# -------------------------------------------------------------------------------------------
# Analysis HDF5 files, written by the main build's CLI (run, never rebuilt here). Each on a short
# text so the files stay small (a few tens of KB).
T="$CORPUS/fuzz_analysis_hdf5"
mkdir -p "$T"
MODEL="$FIXTURES/stories260K/stories260K.bin"
if [ -x "$CLI" ] && [ -s "$CLI" ] && [ -f "$MODEL" ]; then
  rm -f "$T"/seed-*
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/poslens-seeds.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
  TEXT="Once upon a time"
  run_cli() {  # name, then the CLI arguments; a failing command is reported and skipped
    local name="$1"; shift
    if "$CLI" "$@" >"$WORK/$name.log" 2>&1 && [ -f "$WORK/$name.h5" ]; then
      local size; size=$(stat -c %s "$WORK/$name.h5")
      if [ "$size" -le $((256 * 1024)) ]; then
        cp "$WORK/$name.h5" "$T/seed-$name.h5"
      else
        echo "make_seeds: skipped $name.h5: $size bytes > 256 KiB" >&2
      fi
    else
      echo "make_seeds: poslens-cli $* failed (see below); seed skipped" >&2
      tail -3 "$WORK/$name.log" >&2 || true
    fi
  }
  run_cli heads heads "$MODEL" --text "$TEXT" --out "$WORK/heads.h5"
  run_cli massive massive-activations "$MODEL" --text "$TEXT" --out "$WORK/massive.h5"
  run_cli frequency-usage frequency-usage "$MODEL" --text "$TEXT" --out "$WORK/frequency-usage.h5"
  run_cli divergence divergence "$MODEL" "$MODEL" --text "$TEXT" --out "$WORK/divergence.h5"
  run_cli position-offset position-offset "$MODEL" --text "$TEXT" --offset 3 --out "$WORK/position-offset.h5"
  run_cli probe probe "$MODEL" --length 8 --samples 16 --out "$WORK/probe.h5"
  run_cli length-loss length-loss "$MODEL" --text "$TEXT, there was a little girl named Lily." --length 8 \
    --windows 2 --scaling none,linear:2 --out "$WORK/length-loss.h5"
  DEMOS="$ROOT/resources/demos"
  if [ -d "$DEMOS/text-heinsen" ]; then
    run_cli heinsen heinsen-states "$DEMOS/text-heinsen" --text "once upon a time" --out "$WORK/heinsen.h5"
  fi
  if [ -d "$DEMOS/text-rope-series" ]; then
    run_cli compare compare "$DEMOS/text-rope-series/step-000000" "$DEMOS/text-rope-series/step-000150" \
      --length 8 --samples 8 --out "$WORK/compare.h5"
  fi
  run_cli frequencies frequencies "$MODEL" --text "$TEXT" --out "$WORK/frequencies.h5"
  run_cli position-map position-map "$MODEL" --text "$TEXT" --out "$WORK/position-map.h5"
  run_cli run run "$MODEL" --text "$TEXT" --out "$WORK/run.h5"
else
  echo "make_seeds: $CLI or $MODEL missing: no analysis HDF5 seeds (fuzz_analysis_hdf5 starts from nothing)" >&2
fi

for d in "$CORPUS"/*/; do
  printf '%-28s %4d seeds\n' "$(basename "$d")" "$(find "$d" -maxdepth 1 -name 'seed-*' | wc -l)"
done
