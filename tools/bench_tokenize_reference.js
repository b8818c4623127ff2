#!/usr/bin/env node
// Encode speed of HF's Rust `tokenizers` (npm binding) on one text, the reference for
// bench/bench_tokenize.cpp: `node tools/bench_tokenize_reference.js TOKENIZER.json TEXT_FILE
// ROUNDS` prints the median seconds of ROUNDS encodes after one warm-up, and the number of ids.
// Needs NODE_PATH pointing at a node_modules with `tokenizers` (see scripts/bench_tokenize.sh).
const fs = require("fs");
const { Tokenizer } = require("tokenizers");
const [file, textFile, roundsArg] = process.argv.slice(2);
const tokenizer = Tokenizer.fromFile(file);
const text = fs.readFileSync(textFile, "utf8");
const rounds = Math.max(1, parseInt(roundsArg || "5", 10));
(async () => {
  let ids = (await tokenizer.encode(text)).getIds().length;  // warm-up
  const seconds = [];
  for (let r = 0; r < rounds; ++r) {
    const t0 = process.hrtime.bigint();
    ids = (await tokenizer.encode(text)).getIds().length;
    seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  seconds.sort((a, b) => a - b);
  console.log(JSON.stringify({ impl: "hf", median_s: seconds[Math.floor(rounds / 2)], ids,
                               bytes: Buffer.byteLength(text, "utf8") }));
})();
