#!/usr/bin/env node
// Reference ids from HF's Rust `tokenizers` (npm package `tokenizers`, prebuilt for linux-x64):
//   npm install tokenizers && node tools/hf_tokenizer_ids.js TOKENIZER.json TEXT...
// prints one JSON line per text: {"text", "ids", "tokens", "decoded"}. Used once to generate
// the expected values committed in tests (the suite itself needs no network or node).
const { Tokenizer } = require("tokenizers");
const tokenizer = Tokenizer.fromFile(process.argv[2]);
(async () => {
  for (const text of process.argv.slice(3)) {
    const encoding = await tokenizer.encode(text);
    const ids = encoding.getIds();
    const decoded = await tokenizer.decode(ids, true);
    console.log(JSON.stringify({ text, ids, tokens: encoding.getTokens(), decoded }));
  }
})();
