// A profiling target that recycles code addresses: each round compiles fresh functions, runs
// each hot for a while (so sampling profilers hit it), drops them all and forces a GC, so V8
// reuses the code space of the dead functions for the next round's. The same address then names
// different functions at different times, and only a time-aware symbolizer names them right.
// Run with: node --perf-prof --expose-gc --allow-natives-syntax recycle_hot.js ROUNDS PER_ROUND MS
'use strict';
const rounds = Number(process.argv[2]) || 20;
const perRound = Number(process.argv[3]) || 20;
const msEach = Number(process.argv[4]) || 5;
let sink = 0;
let serial = 0;
for (let round = 0; round < rounds; round++) {
  let live = [];
  for (let i = 0; i < perRound; i++) {
    const id = serial++;
    const f = new Function(`return function jitsymHot${id}(n) {
      let s = ${id};
      for (let k = 0; k < n; k++) s = (s * 31 + k + ${id % 13}) | 0;
      return s;
    };`)();
    %PrepareFunctionForOptimization(f);
    sink += f(10);
    %OptimizeFunctionOnNextCall(f);
    sink += f(10);
    const until = Date.now() + msEach;
    while (Date.now() < until) sink += f(20000);
    live.push(f);
  }
  // The last round's functions stay alive to the end: a profile without sample times (pprof,
  // a perf map) can name them by the code that is there last.
  if (round === rounds - 1) break;
  live = null;
  gc();
}
process.stdout.write(`done ${serial} ${sink}\n`);
