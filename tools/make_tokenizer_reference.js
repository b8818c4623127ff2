#!/usr/bin/env node
// Reference encodings from HF's Rust `tokenizers` (npm package `tokenizers`, its prebuilt
// linux-x64 binding) for PosLens's HfTokenizer tests. Run once; the output is committed and the
// test suite needs neither node nor the network:
//
//   (cd /work/tmp/npmtok && npm install tokenizers@0.23.2)   # any folder; NODE_PATH points at it
//   NODE_PATH=/work/tmp/npmtok/node_modules node tools/make_tokenizer_reference.js \
//       ../shared/fixtures/tokenizers tests/data/tokenizers
//
// Writes <out>/gpt2_reference.json and <out>/mistral_reference.json (the fixtures' tokenizer.json
// on the texts below) and <out>/components_reference.json (small hand-made tokenizer.json files,
// one per HF component and option, each with its own expectations).
//
// Offsets: the node binding returns HF's *character* offsets (Unicode scalar values, Rust's
// encode_char_offsets; not UTF-16 units, not bytes). This script converts them to byte offsets
// into the UTF-8 text, which is what poslens::Encoding holds.
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");

// Character offsets -> UTF-8 byte offsets.
function byteOffsets(text, offsets) {
  const chars = Array.from(text);  // code points
  const at = [0];
  for (const c of chars) at.push(at[at.length - 1] + Buffer.byteLength(c, "utf8"));
  return offsets.map(([s, e]) => {
    if (s > chars.length || e > chars.length) throw new Error(`offset past end in ${JSON.stringify(text)}`);
    return [at[s], at[e]];
  });
}

async function cases(tokenizer, texts) {
  const out = [];
  for (const text of texts) {
    const entry = { text };
    for (const [key, add] of [["with_special", true], ["without_special", false]]) {
      const e = await tokenizer.encode(text, null, { addSpecialTokens: add });
      const ids = e.getIds();
      entry[key] = {
        ids,
        tokens: e.getTokens(),
        offsets: byteOffsets(text, e.getOffsets()),
        decoded: await tokenizer.decode(ids, true),
      };
    }
    out.push(entry);
  }
  return out;
}

// Texts for the real tokenizers: prose, accents, emoji (ZWJ, skin tones, flags), CJK, digit
// runs, whitespace runs, tabs, newlines, code, special tokens inside text, empty, leading spaces.
const FIXTURE_TEXTS = [
  "Hello world!",
  "The quick brown fox jumps over the lazy dog.",
  "",
  " ",
  "   leading spaces and trailing   ",
  "Once upon a time, there was a little girl named Lily. She loved to play outside.",
  "Café naïve résumé façade coöperate ÉCOLE Ærøskøbing",
  "Straße, Ελληνικά, русский текст, עברית, العربية",
  "emoji 😀 family 👨‍👩‍👧‍👦 thumbs 👍🏽 flag 🇩🇪 heart ❤️",
  "日本語のテキストと中文文本，还有한국어 텍스트。",
  "digits 1234567890 and 3.14159 and 1,000,000 and 2024-06-01",
  "tabs\tand\ttabs\n\nnewlines\r\nwindows\n",
  "many     spaces      between\u00a0nbsp\u2003em-space\u3000ideographic",
  "def f(x):\n    return x ** 2  # square\n\nprint(f(3))",
  "for (int i = 0; i < n; ++i) { sum += a[i]; }",
  "<|endoftext|>",
  "before<|endoftext|>after <|endoftext|> spaced",
  "<s>",
  "Hello <s> world</s> and <unk> too",
  "<s><s>",
  "don't can't I'm we'll they've she'd it's O'Neil's",
  "URL: https://example.com/path?q=1&r=two#frag",
  "email@example.org, (parentheses) [brackets] {braces} \"quotes\" 'single'",
  "ALLCAPS lowercase MixedCase camelCaseIdentifier snake_case_name",
  "\u0301 combining first, e\u0301 decomposed é composed",
  "zero\u200bwidth\u200djoiner\ufeffbom",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝟙𝟚𝟛 and ﬁ ligature ½ ①",
  "  \n  ",
  "a",
  "The year 1987 had 365 days; 2000 had 366.",
  "Repeated repeated REPEATED words words words.",
];

// ---- small hand-made tokenizers, one per component ------------------------------------------
function baseVocab(extra) {
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  let next = 3;
  const add = (t) => { if (!(t in vocab)) vocab[t] = next++; };
  for (let b = 0; b < 256; ++b) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  for (let c = 0x21; c < 0x7f; ++c) add(String.fromCharCode(c));
  for (const t of ["▁", " ", "\t", "\n", "é", "ï", "ü", "日", "本", "語", "😀", "Ġ"]) add(t);
  for (const t of extra || []) add(t);
  return { vocab, add };
}

function bpe(opts = {}) {
  const { vocab, add } = baseVocab(opts.extra);
  const merges = [];
  for (const [a, b] of opts.merges || []) {
    add(a); add(b);
    const prefix = opts.continuing_subword_prefix || "";
    add(a + (prefix && b.startsWith(prefix) ? b.slice(prefix.length) : b));
    merges.push(opts.pairMerges ? [a, b] : `${a} ${b}`);
  }
  return {
    type: "BPE", dropout: null, unk_token: opts.unk === undefined ? "<unk>" : opts.unk,
    continuing_subword_prefix: opts.continuing_subword_prefix || null,
    end_of_word_suffix: opts.end_of_word_suffix || null,
    fuse_unk: !!opts.fuse_unk, byte_fallback: !!opts.byte_fallback,
    ignore_merges: !!opts.ignore_merges, vocab, merges,
  };
}

const SPECIALS = [
  { id: 0, content: "<unk>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
  { id: 1, content: "<s>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
  { id: 2, content: "</s>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
];

function tok(parts) {
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: parts.added_tokens || SPECIALS,
    normalizer: parts.normalizer || null,
    pre_tokenizer: parts.pre_tokenizer || null,
    model: parts.model || bpe({ merges: WORD_MERGES }),
    post_processor: parts.post_processor || null,
    decoder: parts.decoder === undefined ? { type: "Fuse" } : parts.decoder,
  };
}

const WORD_MERGES = [["t", "h"], ["th", "e"], ["i", "n"], ["in", "g"], ["e", "r"], ["▁", "t"],
  ["▁t", "he"], ["▁", "a"], ["1", "2"], ["12", "3"], ["l", "l"], ["he", "ll"], ["hell", "o"],
  ["Ġ", "t"], ["Ġt", "he"], ["w", "o"], ["wo", "r"]];
const TEMPLATE_BOS = {
  type: "TemplateProcessing",
  single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
  pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
         { Sequence: { id: "B", type_id: 1 } }],
  special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
};
const TEMPLATE_BOS_EOS = {
  type: "TemplateProcessing",
  single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
           { SpecialToken: { id: "</s>", type_id: 0 } }],
  pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
  special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] },
                    "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] } },
};
const behaviours = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"];
const metaspace = (scheme, split) => ({ type: "Metaspace", replacement: "▁", prepend_scheme: scheme, split });

const COMPONENTS = [];
const component = (name, json) => COMPONENTS.push({ name, json });
for (const b of behaviours) {
  component(`split_string_${b}`, tok({ pre_tokenizer: { type: "Split", pattern: { String: " " }, behavior: b, invert: false } }));
  component(`split_regex_${b}`, tok({ pre_tokenizer: { type: "Split", pattern: { Regex: "\\s+|\\d" }, behavior: b, invert: false } }));
  component(`split_regex_invert_${b}`, tok({ pre_tokenizer: { type: "Split", pattern: { Regex: "\\p{L}+" }, behavior: b, invert: true } }));
  component(`punctuation_${b}`, tok({ pre_tokenizer: { type: "Punctuation", behavior: b } }));
}
component("digits_individual", tok({ pre_tokenizer: { type: "Digits", individual_digits: true } }));
component("digits_grouped", tok({ pre_tokenizer: { type: "Digits", individual_digits: false } }));
component("whitespace", tok({ pre_tokenizer: { type: "Whitespace" } }));
component("whitespace_split", tok({ pre_tokenizer: { type: "WhitespaceSplit" } }));
for (const scheme of ["first", "always", "never"])
  for (const split of [true, false])
    component(`metaspace_${scheme}_${split ? "split" : "nosplit"}`,
      tok({ pre_tokenizer: metaspace(scheme, split), decoder: metaspace(scheme, split) }));
component("pre_sequence", tok({ pre_tokenizer: { type: "Sequence", pretokenizers: [
  { type: "WhitespaceSplit" }, { type: "Digits", individual_digits: true }, { type: "Punctuation", behavior: "Isolated" }] } }));
component("bytelevel_prefix", tok({ pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true } }));
component("bytelevel_noregex_notrim", tok({ pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
  post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
  decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false } }));

component("replace_string", tok({ normalizer: { type: "Replace", pattern: { String: " " }, content: "▁" } }));
component("replace_regex", tok({ normalizer: { type: "Replace", pattern: { Regex: "[0-9]+|\\s{2,}" }, content: "#" } }));
component("replace_delete", tok({ normalizer: { type: "Replace", pattern: { String: "e" }, content: "" } }));
component("strip_both", tok({ normalizer: { type: "Strip", strip_left: true, strip_right: true } }));
component("strip_left", tok({ normalizer: { type: "Strip", strip_left: true, strip_right: false } }));
component("strip_right", tok({ normalizer: { type: "Strip", strip_left: false, strip_right: true } }));
component("lowercase", tok({ normalizer: { type: "Lowercase" } }));
for (const nf of ["NFC", "NFD", "NFKC", "NFKD"])
  component(`normalizer_${nf}`, tok({ normalizer: { type: nf }, model: bpe({ byte_fallback: true, merges: WORD_MERGES }),
    decoder: { type: "Sequence", decoders: [{ type: "ByteFallback" }, { type: "Fuse" }] } }));
component("prepend", tok({ normalizer: { type: "Prepend", prepend: "▁" } }));
component("normalizer_sequence", tok({ normalizer: { type: "Sequence", normalizers: [
  { type: "NFKC" }, { type: "Lowercase" }, { type: "Strip", strip_left: true, strip_right: true },
  { type: "Prepend", prepend: "▁" }, { type: "Replace", pattern: { String: " " }, content: "▁" }] },
  decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " },
    { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] } }));

const added = (content, opts) => Object.assign({ id: 0, content, single_word: false, lstrip: false,
  rstrip: false, normalized: false, special: false }, opts);
component("added_lstrip_rstrip", tok({ added_tokens: [...SPECIALS,
  added("[L]", { lstrip: true, special: true }), added("[R]", { rstrip: true, special: true }),
  added("[LR]", { lstrip: true, rstrip: true })], pre_tokenizer: { type: "WhitespaceSplit" } }));
component("added_single_word", tok({ added_tokens: [...SPECIALS,
  added("ing", { single_word: true }), added("the", { single_word: true, special: true })],
  pre_tokenizer: { type: "WhitespaceSplit" } }));
component("added_normalized", tok({ added_tokens: [...SPECIALS,
  added("HeLLo", { normalized: true }), added("[MASK]", { normalized: false, special: true }),
  added("[Tag]", { normalized: true, special: true })],
  normalizer: { type: "Lowercase" }, pre_tokenizer: { type: "WhitespaceSplit" } }));
component("added_overlapping", tok({ added_tokens: [...SPECIALS, added("<s>x"), added("x</s>")] }));

component("ignore_merges", tok({ model: bpe({ ignore_merges: true, merges: WORD_MERGES, extra: ["words", "Hello"] }),
  pre_tokenizer: { type: "WhitespaceSplit" } }));
component("no_ignore_merges", tok({ model: bpe({ ignore_merges: false, merges: WORD_MERGES, extra: ["words", "Hello"] }),
  pre_tokenizer: { type: "WhitespaceSplit" } }));
component("continuing_subword_prefix", tok({
  model: bpe({ continuing_subword_prefix: "##", pairMerges: true,
    extra: ["##" + "e", "##l", "##o", "##h", "##n", "##g", "##r", "##s", "##t", "##d", "##a", "##i"],
    merges: [["h", "##e"], ["##l", "##l"], ["he", "##ll"], ["hell", "##o"], ["##i", "##n"], ["##in", "##g"], ["t", "##h"]] }),
  pre_tokenizer: { type: "Whitespace" }, decoder: { type: "WordPiece", prefix: "##", cleanup: true } }));
component("end_of_word_suffix", tok({
  model: bpe({ end_of_word_suffix: "</w>", extra: ["e</w>", "o</w>", "d</w>", "s</w>", "g</w>", "t</w>"],
    merges: [["t", "h"], ["th", "e</w>"], ["l", "l"], ["he", "ll"], ["h", "e"], ["hell", "o</w>"]] }),
  pre_tokenizer: { type: "WhitespaceSplit" }, decoder: { type: "BPEDecoder", suffix: "</w>" } }));
component("byte_fallback", tok({ model: bpe({ byte_fallback: true, merges: WORD_MERGES }),
  normalizer: { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "▁" }, { type: "Replace", pattern: { String: " " }, content: "▁" }] },
  post_processor: TEMPLATE_BOS,
  decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " },
    { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] } }));
component("unk_fused", tok({ model: bpe({ fuse_unk: true, merges: WORD_MERGES }), post_processor: TEMPLATE_BOS_EOS }));
component("unk_unfused", tok({ model: bpe({ fuse_unk: false, merges: WORD_MERGES }) }));
component("no_unk", tok({ model: bpe({ unk: null, merges: WORD_MERGES }) }));
component("roberta", tok({ pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "RobertaProcessing", sep: ["</s>", 2], cls: ["<s>", 1], trim_offsets: true, add_prefix_space: false },
  decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true } }));
component("bert_processing", tok({ pre_tokenizer: { type: "WhitespaceSplit" },
  post_processor: { type: "BertProcessing", sep: ["</s>", 2], cls: ["<s>", 1] }, decoder: null }));
component("processor_sequence", tok({ pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "Sequence", processors: [
    { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }, TEMPLATE_BOS_EOS] },
  decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true } }));
component("wordlevel", tok({ model: { type: "WordLevel", unk_token: "<unk>",
  vocab: { "<unk>": 0, "<s>": 1, "</s>": 2, "hello": 3, "world": 4, "the": 5, "Hello": 6, "123": 7 } },
  pre_tokenizer: { type: "Whitespace" }, decoder: null }));

const COMPONENT_TEXTS = [
  "Hello world", "the thing 123 4567 x", "  leading and trailing  ", "tabs\tand\nnewlines",
  "Café naïve ÉCOLE", "ﬁ ① ½ Ｆｕｌｌ", "e\u0301 and é", "日本語 😀!", "",
  "a<s>b </s> c", "x [L] y  [R]  z [LR] w", "sing the thing thermal ing", "HeLLo hello [MASK] [tag] [Tag]",
  "<s>x</s>", "hello words wordsmith", "don't stop, please!",
];

// tools/make_bert_t5_reference.js reuses the texts and the case format.
module.exports = { byteOffsets, cases, FIXTURE_TEXTS };

if (require.main === module) (async () => {
  const [fixtures, outDir] = process.argv.slice(2);
  if (!fixtures || !outDir) {
    console.error("usage: make_tokenizer_reference.js FIXTURES_TOKENIZERS_DIR OUT_DIR");
    process.exit(2);
  }
  fs.mkdirSync(outDir, { recursive: true });
  const header = (source) => ({
    generator: "tools/make_tokenizer_reference.js",
    reference: "HF tokenizers (npm `tokenizers` " + require("tokenizers/package.json").version + ")",
    source,
    offsets: "UTF-8 byte offsets [start, end), converted from the binding's character offsets",
  });
  for (const name of ["gpt2", "mistral"]) {
    const file = path.join(fixtures, name, "tokenizer.json");
    const tokenizer = Tokenizer.fromFile(file);
    const data = header(`fixtures tokenizers/${name}/tokenizer.json`);
    data.cases = await cases(tokenizer, FIXTURE_TEXTS);
    fs.writeFileSync(path.join(outDir, `${name}_reference.json`), JSON.stringify(data, null, 1) + "\n");
  }
  const components = header("hand-made tokenizer.json files, written out here as `tokenizer`");
  components.components = [];
  for (const { name, json } of COMPONENTS) {
    const text = JSON.stringify(json);
    const tokenizer = Tokenizer.fromString(text);
    components.components.push({ name, tokenizer: json, cases: await cases(tokenizer, COMPONENT_TEXTS) });
  }
  fs.writeFileSync(path.join(outDir, "components_reference.json"), JSON.stringify(components) + "\n");
  console.log(`wrote ${COMPONENTS.length} components and 2 fixtures to ${outDir}`);
})().catch((e) => { console.error(e); process.exit(1); });
