// Creates and drops thousands of distinct functions, forcing each through TurboFan, and collects
// garbage between rounds, so V8 reuses the code space of dead functions for new ones: the same
// address then names different functions at different times.
// Run with: node --perf-prof --expose-gc --allow-natives-syntax reuse_workload.js ROUNDS PER_ROUND
'use strict';
const rounds = Number(process.argv[2]) || 40;
const perRound = Number(process.argv[3]) || 100;
let sink = 0;
let serial = 0;
for (let round = 0; round < rounds; round++) {
  let live = [];
  for (let i = 0; i < perRound; i++) {
    const id = serial++;
    // A named inner function: the jitdump name comes from it, unique per id.
    const f = new Function(
        `return function jitsymReuse${id}(x) { return (x * ${id} + ${id % 97}) ^ (x >>> ${id % 7}); };`)();
    %PrepareFunctionForOptimization(f);
    sink += f(1);
    sink += f(2);
    %OptimizeFunctionOnNextCall(f);
    sink += f(3);
    live.push(f);
  }
  live = null;
  gc();
}
process.stdout.write(`done ${serial} ${sink}\n`);
