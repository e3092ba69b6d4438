// Hot JavaScript on worker_threads: each of N workers compiles its own function
// (jitsymWorkerHot<i>) and runs it hot for MS milliseconds, then waits. The main thread prints
// "ready <pid>" once all are done and exits when stdin closes.
// Run with: node --perf-prof worker_hot.js N MS
'use strict';
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');

if (isMainThread) {
  const n = Number(process.argv[2]) || 3;
  const ms = Number(process.argv[3]) || 2000;
  const workers = [];
  let done = 0;
  for (let i = 0; i < n; i++) {
    const w = new Worker(__filename, { workerData: { i, ms } });
    w.on('message', () => {
      if (++done === n) process.stdout.write(`ready ${process.pid}\n`);
    });
    workers.push(w);
  }
  process.stdin.on('data', () => {});
  process.stdin.on('end', () => process.exit(0));
} else {
  const { i, ms } = workerData;
  const f = new Function(`return function jitsymWorkerHot${i}(n) {
    let s = ${i};
    for (let k = 0; k < n; k++) s = (s * 31 + k + ${i}) | 0;
    return s;
  };`)();
  let sink = 0;
  const until = Date.now() + ms;
  while (Date.now() < until) sink += f(20000);
  parentPort.postMessage(sink);
  parentPort.on('message', () => {});  // stays alive (and its thread id with it) until exit
}
