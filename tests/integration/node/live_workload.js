// Runs hot_functions.js, says "ready", then stays alive until stdin closes, so that a test can
// query its code while the process still runs.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const file = path.join(__dirname, 'hot_functions.js');
const result = vm.runInThisContext(fs.readFileSync(file, 'utf8'), {filename: file});
process.stdout.write(`ready ${process.pid} ${result}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
