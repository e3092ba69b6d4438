// A profiling target whose hot functions have names a flame graph must escape and render: non-ASCII
// identifiers, and (when the test runs it from a directory named so) a script path with & < " in
// it, which V8 puts into every function's name in its jitdump and perf map.
// Run with: node --perf-prof --interpreted-frames-native-stack odd_names.js MS
'use strict';
const ms = Number(process.argv[2]) || 1500;

function jitsymLeaf_café(n) {
  let s = 0;
  for (let k = 0; k < n; k++) s = (s * 31 + k) | 0;
  return s;
}

function jitsymMid_中文(n) {
  return jitsymLeaf_café(n) + 1;
}

function jitsymTop_ñ_𝔘(n) {
  return jitsymMid_中文(n) ^ 3;
}

let sink = 0;
const until = Date.now() + ms;
while (Date.now() < until) sink += jitsymTop_ñ_𝔘(20000);
process.stdout.write(`done ${sink}\n`);
