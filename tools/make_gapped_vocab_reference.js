#!/usr/bin/env node
// Reference encodings from HF's Rust `tokenizers` for tokenizer.json files whose model.vocab ids
// do not number 0..n-1 (tiktoken conversions leave gaps; two tokens may even share an id). HF
// loads them; PosLens must too, with HF's ids. Run once; the output is committed:
//
//   NODE_PATH=/work/tmp/npmtok/node_modules node tools/make_gapped_vocab_reference.js \
//       ../shared/fixtures/tokenizers tests/data/tokenizers
//
// Writes <out>/gapped_vocab_reference.json in components_reference.json's layout: each case
// stores its tokenizer. "gpt2_gapped" is the fixture GPT-2 tokenizer.json renumbered as
// gapped_id(id) = id + 3 * floor(id / 97) — its merges and byte-level layout unchanged, ids at a
// real vocabulary's scale with a gap after every 97th — and runs on FIXTURE_TEXTS.
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");
const { cases, FIXTURE_TEXTS } = require("./make_tokenizer_reference.js");

const gappedId = (id) => id + 3 * Math.floor(id / 97);

function gpt2Gapped(fixtures) {
  const json = JSON.parse(fs.readFileSync(path.join(fixtures, "gpt2", "tokenizer.json"), "utf8"));
  for (const token of Object.keys(json.model.vocab)) json.model.vocab[token] = gappedId(json.model.vocab[token]);
  for (const added of json.added_tokens) added.id = gappedId(added.id);
  return json;
}

const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special: true });

function small(model, extra = {}) {
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: extra.added_tokens || [special(1000, "<unk>")],
    normalizer: null, pre_tokenizer: extra.pre_tokenizer || { type: "Whitespace" },
    model, post_processor: extra.post_processor || null,
    decoder: extra.decoder === undefined ? null : extra.decoder,
  };
}

// BPE over letters with ids 10 apart and merges into ids far above the rest.
function gappedBpe() {
  const vocab = { "<unk>": 1000 };
  let id = 5;
  for (const c of "abcdefghijklmnopqrstuvwxyzHTWC!,.'0123456789") { vocab[c] = id; id += 10; }
  const merges = [["t", "h"], ["th", "e"], ["i", "n"], ["in", "g"], ["e", "r"], ["h", "e"], ["l", "l"],
    ["he", "ll"], ["hell", "o"], ["w", "o"], ["wo", "r"], ["wor", "l"], ["worl", "d"]];
  let high = 70000;
  for (const [a, b] of merges) if (!(a + b in vocab)) { vocab[a + b] = high; high += 7; }
  return { type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab, merges: merges.map(([a, b]) => `${a} ${b}`) };
}

const COMPONENTS = [
  { name: "bpe_gaps", json: small(gappedBpe()) },
  // An added token not in the vocabulary: HF numbers it after get_vocab_size() (the number of
  // entries), not after the largest id, and ignores the file's "id".
  { name: "bpe_gaps_added_token_after_entries", json: small(gappedBpe(),
    { added_tokens: [special(1000, "<unk>"), special(5, "<new>"), special(99999, "[X]")] }) },
  { name: "wordlevel_gaps", json: small({ type: "WordLevel", unk_token: "<unk>",
    vocab: { "<unk>": 7, "hello": 100, "world": 3000, "the": 12, "Hello": 65536, "123": 4294967295 } },
    { added_tokens: [special(7, "<unk>")] }) },
  { name: "wordpiece_gaps", json: small({ type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##",
    max_input_chars_per_word: 100,
    vocab: { "[UNK]": 40, "hel": 2, "##lo": 900, "wor": 17, "##ld": 18, "the": 5000, "##s": 4, "thing": 77 } },
    { added_tokens: [special(40, "[UNK]")], decoder: { type: "WordPiece", prefix: "##", cleanup: true } }) },
  // Two tokens with one id: both encode to it; which one HF decodes it to follows its HashMap's
  // random order (differs between runs), so "decoded" is stored as null for this case.
  { name: "wordlevel_shared_id", decodeVaries: true, json: small({ type: "WordLevel", unk_token: "<unk>",
    vocab: { "<unk>": 0, "hello": 4, "Hello": 4, "world": 9 } }, { added_tokens: [special(0, "<unk>")] }) },
];

const TEXTS = ["hello world", "Hello world", "the thing 123", "hello, world!", "WCH'ing", "",
  "unknown ÿ words", "<new> and [X] here", "hellos things"];

if (require.main === module) (async () => {
  const [fixtures, outDir] = process.argv.slice(2);
  if (!fixtures || !outDir) {
    console.error("usage: make_gapped_vocab_reference.js FIXTURES_TOKENIZERS_DIR OUT_DIR");
    process.exit(2);
  }
  const data = {
    generator: "tools/make_gapped_vocab_reference.js",
    reference: "HF tokenizers (npm `tokenizers` " + require("tokenizers/package.json").version + ")",
    source: "hand-made tokenizer.json files with gaps in model.vocab's ids, and the fixture GPT-2 renumbered",
    offsets: "UTF-8 byte offsets [start, end), converted from the binding's character offsets",
    components: [],
  };
  for (const { name, json, decodeVaries } of COMPONENTS) {
    const tokenizer = Tokenizer.fromString(JSON.stringify(json));
    const encoded = await cases(tokenizer, TEXTS);
    if (decodeVaries)
      for (const c of encoded) for (const key of ["with_special", "without_special"]) c[key].decoded = null;
    data.components.push({ name, tokenizer: json, cases: encoded,
      vocab_size_with_added: tokenizer.getVocabSize(true) });
  }
  const gpt2 = Tokenizer.fromString(JSON.stringify(gpt2Gapped(fixtures)));
  data.gpt2_gapped = { renumbering: "id + 3 * floor(id / 97)", cases: await cases(gpt2, FIXTURE_TEXTS) };
  fs.writeFileSync(path.join(outDir, "gapped_vocab_reference.json"), JSON.stringify(data) + "\n");
  console.log(`wrote ${COMPONENTS.length} components and gpt2_gapped to ${outDir}`);
})().catch((e) => { console.error(e); process.exit(1); });
