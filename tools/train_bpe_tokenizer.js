#!/usr/bin/env node
// Trains a GPT-2-style byte-level BPE tokenizer.json on a `text` task corpus with HF's Rust
// `tokenizers` (npm binding), for language models over subwords rather than characters:
//
//   (cd /work/tmp/npmtok && npm install tokenizers@0.23.2)
//   NODE_PATH=/work/tmp/npmtok/node_modules node tools/train_bpe_tokenizer.js \
//       CORPUS_DIR VOCAB_SIZE OUT_tokenizer.json
//
// CORPUS_DIR is read as the text task reads it (core/train/text_corpus.cpp): its regular files
// without an extension in name order, each followed by a "%" line; blocks are separated by a
// line "%" and every 10th block is held out. Only the training blocks, without the "%" lines,
// go to the trainer (a temporary copy), so the held-out text stays unseen and verifies it.
//
// The binding's Tokenizer.train(files) takes no trainer options: it runs the default BpeTrainer
// (30000 tokens, no initial alphabet, min_frequency 0). BPE learns merges greedily, most
// frequent pair first, so the first merges are exactly what a trainer stopped at a smaller size
// learns. The tokenizer written has id 0 `<bos>` (special), ids 1..256 the 256 byte-level
// symbols in byte order (all of them: unseen bytes still encode, no <unk> needed), then the
// results of the trained merges in order until VOCAB_SIZE tokens; the merges kept are those up
// to there (both parts and the result in the vocabulary). Layout as the GPT-2 fixture
// (shared/fixtures/tokenizers/gpt2/tokenizer.json): ByteLevel pre-tokenizer, post-processor and
// decoder without prefix space, merges as "a b" strings. Then it reloads the file with
// Tokenizer.fromFile, checks decode(encode(x)) == x on every held-out block and on every byte,
// and prints the compression in characters per token.
const fs = require("fs");
const os = require("os");
const path = require("path");
const tk = require("tokenizers");

const [corpus, sizeArg, out] = process.argv.slice(2);
const VOCAB_SIZE = Number(sizeArg);
if (!corpus || !out || !Number.isInteger(VOCAB_SIZE) || VOCAB_SIZE < 258 || VOCAB_SIZE > 30000) {
  console.error("usage: train_bpe_tokenizer.js CORPUS_DIR VOCAB_SIZE(258..30000) OUT_tokenizer.json");
  process.exit(2);
}

// The corpus as the text task splits it: [training blocks, held-out blocks].
function corpusBlocks(dir) {
  let text = "";
  for (const name of fs.readdirSync(dir).sort()) {
    const file = path.join(dir, name);
    if (path.extname(name) !== "" || !fs.statSync(file).isFile()) continue;
    text += fs.readFileSync(file, "utf8");
    if (text !== "" && !text.endsWith("\n")) text += "\n";
    text += "%\n";  // a file boundary is a block boundary
  }
  const train = [], test = [];
  for (let start = 0, index = 0; start < text.length; ++index) {
    let end = text.indexOf("\n%\n", start);
    if (end < 0) end = text.length;
    (index % 10 === 9 ? test : train).push(text.slice(start, end));
    start = end + 3;
  }
  return [train, test];
}

// GPT-2's byte -> symbol map: printable Latin-1 bytes stand for themselves, the others (controls,
// space, 0x7f-0xa0, 0xad) take the code points from U+0100 on in byte order.
function byteSymbols() {
  const symbols = [];
  let next = 256;
  for (let b = 0; b < 256; ++b) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    symbols.push(String.fromCodePoint(printable ? b : next++));
  }
  return symbols;
}

const [train, test] = corpusBlocks(corpus);
const trainChars = train.reduce((n, b) => n + b.length, 0);
console.log(`corpus ${corpus}: ${train.length} training blocks (${trainChars} characters), ` +
            `${test.length} held-out blocks`);

// 1. Train with the default trainer on a temporary copy of the training blocks.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bpe-"));
const trainFile = path.join(tmp, "train.txt");
fs.writeFileSync(trainFile, train.join("\n") + "\n");
const trainer = new tk.Tokenizer(tk.BPE.empty());
trainer.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));  // add_prefix_space false, GPT-2 regex
const t0 = Date.now();
trainer.train([trainFile]);
const seconds = (Date.now() - t0) / 1000;
const fullFile = path.join(tmp, "full.json");
trainer.save(fullFile);
const trained = JSON.parse(fs.readFileSync(fullFile, "utf8")).model;
fs.rmSync(tmp, { recursive: true });
console.log(`trained the default BpeTrainer in ${seconds.toFixed(1)} s: ` +
            `${Object.keys(trained.vocab).length} tokens, ${trained.merges.length} merges`);

// 2. Cut it to VOCAB_SIZE: <bos>, the 256 byte symbols, then the first merges.
const symbols = byteSymbols();
const alphabet = new Set(tk.byteLevelAlphabet());
if (alphabet.size !== 256 || !symbols.every((s) => alphabet.has(s)))
  throw new Error("byteLevelAlphabet() differs from GPT-2's byte map");
const tokens = ["<bos>", ...symbols];
const ids = new Map(tokens.map((t, i) => [t, i]));
const merges = [];
for (const merge of trained.merges) {
  const [a, b] = Array.isArray(merge) ? merge : merge.split(" ");  // pairs in 0.23, "a b" before
  const result = a + b;
  if (!ids.has(result) && tokens.length >= VOCAB_SIZE) break;  // where a smaller trainer stops
  if (!ids.has(a) || !ids.has(b)) continue;                    // cannot happen: parts come first
  if (!ids.has(result)) { ids.set(result, tokens.length); tokens.push(result); }
  merges.push(`${a} ${b}`);
}
if (tokens.length < VOCAB_SIZE)
  throw new Error(`the trained merges give only ${tokens.length} tokens, fewer than ${VOCAB_SIZE}`);

// 3. Write tokenizer.json in the GPT-2 fixture's layout (model.vocab listed in id order).
const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
const json = {
  version: "1.0", truncation: null, padding: null,
  added_tokens: [{ id: 0, content: "<bos>", single_word: false, lstrip: false, rstrip: false,
                   normalized: false, special: true }],
  normalizer: null, pre_tokenizer: byteLevel, post_processor: byteLevel, decoder: byteLevel,
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
           end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab: "@VOCAB@", merges },
};
const vocabJson = "{" + tokens.map((t, i) => `${JSON.stringify(t)}:${i}`).join(",") + "}";
fs.writeFileSync(out, JSON.stringify(json).replace('"@VOCAB@"', () => vocabJson) + "\n");
console.log(`wrote ${out}: ${tokens.length} tokens (<bos>, 256 bytes, ${tokens.length - 257} merged), ` +
            `${merges.length} merges`);

// 4. Verify: HF reads the file back, round-trips the held-out text and every byte.
(async () => {
  const tokenizer = tk.Tokenizer.fromFile(out);
  const size = tokenizer.getVocabSize(true);
  if (size !== VOCAB_SIZE) throw new Error(`reloaded vocabulary has ${size} tokens, not ${VOCAB_SIZE}`);
  if (tokenizer.tokenToId("<bos>") !== 0) throw new Error("<bos> is not id 0");
  const samples = [...test, "bytes: \u0000\u0007\u007f\u00a0\u00ad é 漢字 🙂 \t\r\n"];
  let chars = 0, count = 0;
  for (const [i, text] of samples.entries()) {
    const encoding = await tokenizer.encode(text);
    const decoded = await tokenizer.decode(encoding.getIds(), false);
    if (decoded !== text) throw new Error(`round trip fails on held-out block ${i}: ${JSON.stringify(text.slice(0, 80))}`);
    if (i < test.length) { chars += [...text].length; count += encoding.getLength(); }
  }
  const line = test.flatMap((b) => b.split("\n")).find((l) => l.length > 60);
  const example = await tokenizer.encode(line);
  console.log(`verified: reloaded with ${size} tokens; decode(encode(x)) == x on ${test.length} held-out ` +
              `blocks and all bytes; held-out ${chars} characters -> ${count} tokens = ` +
              `${(chars / count).toFixed(3)} characters/token`);
  console.log(`example: ${JSON.stringify(line)} -> ${JSON.stringify(example.getTokens())}`);
})().catch((e) => { console.error(e); process.exit(1); });
