#!/usr/bin/env node
// Reference encodings from HF's Rust `tokenizers` (npm `tokenizers`, prebuilt linux-x64) for
// PosLens's WordPiece, BertNormalizer, Unigram and Precompiled support, in the format of
// tools/make_tokenizer_reference.js (whose texts and case writer it reuses). Run once after
// tools/make_wordpiece_tokenizer_json.js and tools/make_unigram_tokenizer_json.py; the output
// is committed and the test suite needs neither node nor python:
//
//   NODE_PATH=/work/tmp/npmtok/node_modules node tools/make_bert_t5_reference.js tests/data/tokenizers
//
// Reads DIR/{bert_uncased,bert_cased,t5_unigram}_tokenizer.json and DIR/unigram_tiny_charsmap.json;
// writes DIR/<name>_reference.json for the three tokenizers (FIXTURE_TEXTS + EXTRA_TEXTS) and
// DIR/bert_t5_components_reference.json (small hand-made tokenizer.json files, one per option,
// stored as `tokenizer`, on COMPONENT_TEXTS).
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");
const { cases, FIXTURE_TEXTS } = require("./make_tokenizer_reference.js");

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error("usage: make_bert_t5_reference.js TESTS_DATA_TOKENIZERS_DIR");
  process.exit(2);
}

// Hostile texts for BERT and T5: control characters, NUL, U+FFFD, characters newer than Unicode
// 8.0 (HF's category tables), CJK blocks and extensions, compatibility forms the charsmap
// rewrites, CRLF, special tokens typed in the text, words longer than max_input_chars_per_word,
// private use, scripts neither vocabulary covers, whitespace only.
const EXTRA_TEXTS = [
  "control\u0000chars\u0001\u0007\u007f\u0085here\ufffd and \u200b zero width",
  "\u001eleading control, \u0301leading combining",
  "\u0000\u0000",
  "[CLS] typed [SEP] and [MASK] and [UNK] [PAD] inside",
  "</s> and <pad> and <unk> and <extra_id_0> typed, <extra_id_4>!",
  "Supercalifragilisticexpialidocious antidisestablishmentarianism",
  "a".repeat(101) + " " + "ab".repeat(50) + " " + "é".repeat(101),
  "x".repeat(24) + " " + "y".repeat(25) + " " + "z".repeat(26) + " " + "😀".repeat(26),
  "Unicode 9+: a\u2E43b a\u2E42b \u08E2 e\u08D4x e\u08E3x 🥰 🥺",
  "CJK ext: \u{20000}\u{2A700} \uF900 \u3400 and Hangul 한글 and kana カタカナ",
  "Ⅻ ㎏ ﬀ ＡＢＣ１２３ ½ ™ ① … fullwidth and compatibility",
  // graphemes under 6 bytes whose first charsmap match is shorter than the longest: HF keeps
  // the first ("Ａ\u0301" -> "A")
  "Ａ\u0301 Ａ\u0301\u0302 ﬁ\u0301 Ⅻ\u0301 ①\u0301 ｶﾞ ｶ\u3099 \u00a0\u0301x ㎏\u0301",
  "crlf\r\nmixed\r\n\r\nlines\n\ttab\u000b\u000cvt ff",
  "İstanbul ǅ ß ẞ ΣΑΣ ﬃ Ǆ",
  "🇺🇳🏳️‍🌈 👩🏽‍💻 e\u0301\u0302\u0303 stacked",
  "\u00a0\u2007\u202f nbsp kinds \u2028 line sep \u2029 para sep",
  "private use \uE000\uF8FF \u{F0000} here",
  "unknown 𐍈 gothic and ꙮ and 𓀀 hieroglyph",
  "   ",
  "\t\n",
  "!!!???...,,,;;;",
  "word-with-hyphens and snake_case and CamelCase123",
  "don't  won't  y'all 'quoted' \"double\" do not , . ? !",
  "Ω≈ç√∫˜µ≤≥÷ åß∂ƒ©˙∆˚¬…æ",
];

// ---- small hand-made tokenizers ----------------------------------------------------------
const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
                                  normalized: false, special: true });

const WP_PIECES = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "hello", "world", "the", "thing",
  "t", "h", "e", "a", "b", "c", "d", "g", "i", "l", "n", "o", "r", "s", "w", "x", "y", "z", "p",
  "##s", "##ing", "##h", "##e", "##a", "##b", "##c", "##d", "##g", "##i", "##l", "##n", "##o",
  "##r", "##t", "##w", "##y", "##k", "##m", "##p", "##u", "##f", "##é", "##1", "##2", "##3",
  "un", "##aff", "##able", "café", "cafe", "é", "!", "?", ",", ".", "'", "don", "##'", "1", "2",
  "3", "4", "123", "日", "本", "語", "f", "i", "ﬁ", "Hello", "HeLLo", "@@s", "@@ing", "@@e",
  "@@l", "@@o", "@@r", "@@d", "k", "m", "q", "u", "v", "j"];
function wordpiece(opts = {}) {
  const vocab = {};
  for (const p of WP_PIECES) if (!(p in vocab)) vocab[p] = Object.keys(vocab).length;
  return { type: "WordPiece", unk_token: "[UNK]",
           continuing_subword_prefix: opts.prefix === undefined ? "##" : opts.prefix,
           max_input_chars_per_word: opts.maxChars || 100, vocab };
}
const WP_ADDED = [added(0, "[UNK]"), added(1, "[CLS]"), added(2, "[SEP]"), added(3, "[PAD]"), added(4, "[MASK]")];
const BERT_POST = { type: "BertProcessing", sep: ["[SEP]", 2], cls: ["[CLS]", 1] };
const bertNorm = (o) => Object.assign({ type: "BertNormalizer", clean_text: true,
  handle_chinese_chars: true, strip_accents: null, lowercase: true }, o);
function wp(parts) {
  return { version: "1.0", truncation: null, padding: null, added_tokens: WP_ADDED,
    normalizer: parts.normalizer === undefined ? bertNorm({}) : parts.normalizer,
    pre_tokenizer: parts.pre_tokenizer || { type: "BertPreTokenizer" },
    post_processor: parts.post_processor === undefined ? BERT_POST : parts.post_processor,
    decoder: parts.decoder === undefined ? { type: "WordPiece", prefix: "##", cleanup: true } : parts.decoder,
    model: parts.model || wordpiece() };
}

// Unigram: scores chosen for ties ("ab" = "a" + "b") and for pieces that beat their parts.
const UNI_PIECES = [["<unk>", 0], ["<s>", 0], ["</s>", 0], ["▁", -2], ["▁the", -3], ["▁a", -3.5],
  ["he", -4], ["ing", -4], ["th", -4.5], ["▁hello", -5], ["hello", -6], ["ll", -5], ["▁wor", -6],
  ["ld", -5.5], ["▁world", -7], ["é", -6], ["12", -6], ["123", -7], ["ab", -5], ["▁thing", -6.25],
  ["<unk>", -1], ["x", -3], ["▁x", -3.5], ["es", -4.75], ["fi", -5.5], ["TM", -5], ["1⁄2", -6]];
for (const c of "abcdefghijklmnopqrstuvwyz0123456789.,!?'") UNI_PIECES.push([c, c === "a" || c === "b" ? -2.5 : -4.5]);
const BYTES = Array.from({ length: 256 }, (_, b) => [`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, 0]);
function unigram(opts = {}) {
  return { type: "Unigram", unk_id: opts.unk_id === undefined ? 0 : opts.unk_id,
           vocab: UNI_PIECES.concat(opts.byte_fallback ? BYTES : []), byte_fallback: !!opts.byte_fallback };
}
const UNI_ADDED = [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")];
const metaspace = (scheme, split) => ({ type: "Metaspace", replacement: "▁", prepend_scheme: scheme, split });
const EOS_TEMPLATE = {
  type: "TemplateProcessing",
  single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
  pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
  special_tokens: { "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] } },
};
function uni(parts) {
  return { version: "1.0", truncation: null, padding: null,
    added_tokens: parts.added_tokens || UNI_ADDED,
    normalizer: parts.normalizer || null,
    pre_tokenizer: parts.pre_tokenizer || metaspace("always", true),
    post_processor: parts.post_processor === undefined ? EOS_TEMPLATE : parts.post_processor,
    decoder: parts.decoder || metaspace("always", true),
    model: parts.model || unigram() };
}

const COMPONENTS = [];
const component = (name, json) => COMPONENTS.push({ name, json });
function buildComponents(tinyCharsmap) {
  const precompiled = { type: "Precompiled", precompiled_charsmap: tinyCharsmap };
  component("wordpiece_bert", wp({}));
  component("wordpiece_whitespace_no_normalizer", wp({ normalizer: null, pre_tokenizer: { type: "Whitespace" },
    decoder: { type: "WordPiece", prefix: "##", cleanup: false } }));
  component("wordpiece_max_chars_5", wp({ model: wordpiece({ maxChars: 5 }) }));
  component("wordpiece_prefix_at", wp({ model: wordpiece({ prefix: "@@" }),
    decoder: { type: "WordPiece", prefix: "@@", cleanup: true } }));
  component("wordpiece_template", wp({ post_processor: {
    type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
             { SpecialToken: { id: "[SEP]", type_id: 0 } }],
    pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
    special_tokens: { "[CLS]": { id: "[CLS]", ids: [1], tokens: ["[CLS]"] },
                      "[SEP]": { id: "[SEP]", ids: [2], tokens: ["[SEP]"] } } } }));
  component("bert_normalizer_no_clean_text", wp({ normalizer: bertNorm({ clean_text: false }) }));
  component("bert_normalizer_no_chinese", wp({ normalizer: bertNorm({ handle_chinese_chars: false }) }));
  component("bert_normalizer_cased_strip", wp({ normalizer: bertNorm({ lowercase: false, strip_accents: true }) }));
  component("bert_normalizer_lower_keep_accents", wp({ normalizer: bertNorm({ strip_accents: false }) }));
  component("bert_normalizer_cased", wp({ normalizer: bertNorm({ lowercase: false }) }));
  component("bert_normalizer_sequence", wp({ normalizer: { type: "Sequence", normalizers: [
    { type: "NFKC" }, bertNorm({ handle_chinese_chars: false })] }, pre_tokenizer: { type: "WhitespaceSplit" } }));
  component("unigram_metaspace", uni({}));
  component("unigram_metaspace_first_nosplit", uni({ pre_tokenizer: metaspace("first", false),
    decoder: metaspace("first", false) }));
  component("unigram_byte_fallback", uni({ model: unigram({ byte_fallback: true }),
    decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " },
      { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] } }));
  component("unigram_unk_id_3", uni({ model: unigram({ unk_id: 3 }), added_tokens: [added(1, "<s>"), added(2, "</s>")] }));
  component("unigram_literal_unk_piece", uni({ added_tokens: [added(1, "<s>"), added(2, "</s>")],
    pre_tokenizer: { type: "WhitespaceSplit" }, decoder: null }));
  component("unigram_whitespace_no_post", uni({ pre_tokenizer: { type: "Whitespace" }, post_processor: null, decoder: null }));
  component("precompiled_tiny", uni({ normalizer: precompiled }));
  component("precompiled_sequence_t5_modern", uni({ normalizer: { type: "Sequence", normalizers: [
    precompiled, { type: "Strip", strip_left: false, strip_right: true },
    { type: "Replace", pattern: { Regex: " {2,}" }, content: "▁" }] } }));
  component("precompiled_then_bert_pretokenizer", uni({ normalizer: precompiled,
    pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "BertPreTokenizer" }, metaspace("always", true)] } }));
}

const COMPONENT_TEXTS = [
  "Hello world", "the thing 123 4567 x", "  leading and trailing  ", "tabs\tand\nnewlines",
  "Café naïve ÉCOLE", "ﬁ ① ½ Ｆｕｌｌ ™", "e\u0301 and é", "日本語 😀!", "",
  "hello things unaffable don't", "HeLLo hello [MASK] [CLS]x [UNK]", "ab abab aab", "x<unk>y 😀<unk> <s>",
  "\u001eabc\r\nd\tq\u0000z", "unaffablething helloworld Ⅻx ⓜx ⅹ〣 a\u200db", "a\u2E43b \u08E2 e\u08D4x e\u08E3x 😀😀 🥰",
];

(async () => {
  const header = (source, note) => ({
    generator: "tools/make_bert_t5_reference.js",
    reference: "HF tokenizers (npm `tokenizers` " + require("tokenizers/package.json").version + ")",
    source,
    offsets: "UTF-8 byte offsets [start, end), converted from the binding's character offsets",
    note,
  });
  const texts = FIXTURE_TEXTS.concat(EXTRA_TEXTS);
  for (const name of ["bert_uncased", "bert_cased", "t5_unigram"]) {
    const file = path.join(dir, `${name}_tokenizer.json`);
    const data = header(`tests/data/tokenizers/${name}_tokenizer.json`);
    data.cases = await cases(Tokenizer.fromFile(file), texts);
    fs.writeFileSync(path.join(dir, `${name}_reference.json`), JSON.stringify(data, null, 1) + "\n");
  }
  const tiny = JSON.parse(fs.readFileSync(path.join(dir, "unigram_tiny_charsmap.json"), "utf8"));
  buildComponents(tiny.precompiled_charsmap);
  const components = header("hand-made tokenizer.json files, written out here as `tokenizer`");
  components.components = [];
  for (const { name, json } of COMPONENTS) {
    const tokenizer = Tokenizer.fromString(JSON.stringify(json));
    components.components.push({ name, tokenizer: json, cases: await cases(tokenizer, COMPONENT_TEXTS) });
  }
  fs.writeFileSync(path.join(dir, "bert_t5_components_reference.json"), JSON.stringify(components) + "\n");
  console.log(`wrote 3 tokenizers x ${texts.length} texts and ${COMPONENTS.length} components to ${dir}`);
})().catch((e) => { console.error(e); process.exit(1); });
