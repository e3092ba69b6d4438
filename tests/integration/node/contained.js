// The perf workload (../perf/recycle_hot.js: code addresses recycled round after round) as a
// container's main process runs it: says where it runs, works, then stays alive a little longer
// (LINGER_MS) as a service would, so a symbolizer on the host has time to read the last code.
// Run with: node --perf-prof --expose-gc --allow-natives-syntax contained.js ROUNDS PER MS LINGER_MS
'use strict';
process.stdout.write(`start ${process.pid}\n`);
require('../perf/recycle_hot.js');
setTimeout(() => {}, Number(process.argv[5]) || 1500);
