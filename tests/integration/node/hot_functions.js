// Hot functions with names no runtime uses, run long enough to be compiled by every tier
// (Sparkplug `JS:^`, TurboFan `JS:*`). live_workload.js runs this file through vm so that V8
// records its path as a plain string in the jitdump's debug entries.
function jitsymHotAlpha(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += (i * 7) % 13;
  return s;
}

function jitsymHotBeta(values) {
  let r = 1;
  for (const x of values) r = (r * 31 + x) | 0;
  return r;
}

function jitsymHotGamma(words) {
  const counts = {};
  for (const w of words) counts[w] = (counts[w] || 0) + w.length;
  return Object.keys(counts).length;
}

(function drive() {
  const values = Array.from({length: 100}, (_, i) => i);
  const words = ['alpha', 'beta', 'gamma', 'delta', 'alpha', 'beta'];
  let acc = 0;
  for (let k = 0; k < 50000; k++) {
    acc += jitsymHotAlpha(200);
    acc += jitsymHotBeta(values);
    acc += jitsymHotGamma(words);
  }
  return acc;
})();
