// Preload that CPU-profiles a Node process with the built-in inspector and writes the profile
// (Chrome DevTools `.cpuprofile`) when the process exits. Node 20 refuses `--cpu-prof` in
// NODE_OPTIONS, but accepts `--require`:
//   KB_BENCH_NODE_OPTIONS="--require $PWD/tools/lib/cpu-profile.cjs" node tools/bench/index.mjs --parts api
// Profiles go to KB_CPU_PROFILE_DIR (default: the OS temp dir), named <app>-<pid>.cpuprofile.
const inspector = require('node:inspector');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 1000 }); // µs
session.post('Profiler.start');
let written = false;
process.on('exit', () => {
  if (written) return;
  written = true;
  // An in-process session answers synchronously, so the profile is written before exit.
  session.post('Profiler.stop', (err, result) => {
    if (err) return;
    const app = path.basename(path.dirname(path.dirname(process.argv[1] || 'node')));
    fs.writeFileSync(path.join(process.env.KB_CPU_PROFILE_DIR || os.tmpdir(), `${app}-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
  });
});
