#!/usr/bin/env node
// BERT-style HF tokenizer.json files (WordPiece) for PosLens' tokenizer tests, trained with HF's
// own WordPiece trainer through the npm binding. Run once; the output is committed:
//
//   (cd /work/tmp/npmtok && npm install tokenizers@0.23.2)
//   NODE_PATH=/work/tmp/npmtok/node_modules node tools/make_wordpiece_tokenizer_json.js \
//       ../shared/seeds tests/data/tokenizers
//
// Trains on the seed papers (SEEDS_DIR/*.txt) plus the inline multilingual text below, with the
// binding's default WordPiece trainer (Tokenizer.train: the model's own trainer, "##" prefix),
// keeps the first KEEP tokens of the trained vocabulary (alphabet first, then the earliest
// merges: a realistic long tail of [UNK]s on the test texts) after BERT's five special tokens,
// and writes bert-base-uncased's layout:
//   bert_uncased_tokenizer.json  BertNormalizer(lowercase, strip_accents null), BertPreTokenizer,
//                                TemplateProcessing "[CLS] $A [SEP]", WordPiece decoder,
//                                max_input_chars_per_word 100
//   bert_cased_tokenizer.json    BertNormalizer(lowercase false, strip_accents null),
//                                BertProcessing, max_input_chars_per_word 25
const fs = require("fs");
const os = require("os");
const path = require("path");
const tk = require("tokenizers");

const [seeds, outDir] = process.argv.slice(2);
if (!seeds || !outDir) {
  console.error("usage: make_wordpiece_tokenizer_json.js SEEDS_DIR OUT_DIR");
  process.exit(2);
}

const MULTILINGUAL = `Café au lait, crème brûlée, naïve façade, résumé and déjà vu are French loans.
Die Straße führt über die Brücke; Größe und Übermut sind deutsche Wörter.
El niño comió jalapeños en la montaña. São Paulo fica no Brasil, à beira-mar.
Ελληνικά: καλημέρα κόσμε. Русский текст: привет, мир.
日本語の文章と中文的句子，还有한국어 문장도 있습니다。東京は日本の首都です。
`;
const KEEP = 3000;
const SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

function trainVocab(files, lowercase) {
  const t = new tk.Tokenizer(tk.WordPiece.empty());
  t.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase }));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.train(files);
  const trained = Object.entries(t.getVocab(false)).sort((a, b) => a[1] - b[1]).map(([s]) => s);
  const vocab = {};
  for (const s of SPECIALS) vocab[s] = Object.keys(vocab).length;
  for (const s of trained) {
    if (Object.keys(vocab).length >= SPECIALS.length + KEEP) break;
    if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
  }
  return vocab;
}

function bertJson(vocab, { lowercase, maxChars, template }) {
  const special = (s) => ({ id: vocab[s], content: s, single_word: false, lstrip: false,
                            rstrip: false, normalized: false, special: true });
  const cls = ["[CLS]", vocab["[CLS]"]], sep = ["[SEP]", vocab["[SEP]"]];
  const post = template ? {
    type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
             { SpecialToken: { id: "[SEP]", type_id: 0 } }],
    pair: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
           { SpecialToken: { id: "[SEP]", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } },
           { SpecialToken: { id: "[SEP]", type_id: 1 } }],
    special_tokens: { "[CLS]": { id: "[CLS]", ids: [cls[1]], tokens: ["[CLS]"] },
                      "[SEP]": { id: "[SEP]", ids: [sep[1]], tokens: ["[SEP]"] } },
  } : { type: "BertProcessing", sep, cls };
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: SPECIALS.map(special),
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true,
                  strip_accents: null, lowercase },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: post,
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##",
             max_input_chars_per_word: maxChars, vocab },
  };
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "wordpiece-"));
const extra = path.join(tmp, "multilingual.txt");
fs.writeFileSync(extra, MULTILINGUAL.repeat(5));
const files = fs.readdirSync(seeds).filter((f) => f.endsWith(".txt")).sort()
  .map((f) => path.join(seeds, f)).concat([extra]);
fs.mkdirSync(outDir, { recursive: true });
for (const [name, options] of [
  ["bert_uncased", { lowercase: true, maxChars: 100, template: true }],
  ["bert_cased", { lowercase: false, maxChars: 25, template: false }],
]) {
  const json = bertJson(trainVocab(files, options.lowercase), options);
  tk.Tokenizer.fromString(JSON.stringify(json));  // HF reads it back
  const file = path.join(outDir, `${name}_tokenizer.json`);
  fs.writeFileSync(file, JSON.stringify(json) + "\n");
  console.log(`${file}: ${Object.keys(json.model.vocab).length} tokens, ${fs.statSync(file).size} bytes`);
}
fs.rmSync(tmp, { recursive: true });
