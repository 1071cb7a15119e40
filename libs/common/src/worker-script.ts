/**
 * How a `worker_threads` Worker is started from a module of this repository, built or not: a build
 * runs the compiled `<name>.js` beside the caller; from TypeScript sources (Jest's ts-jest) the
 * worker compiles the modules it loads with the TypeScript compiler (a dev dependency), which then
 * lives in the thread's heap too (a heap cap a built worker meets may fail from sources). The
 * worker's modules may import only relative paths and packages (no `@kb/*` path aliases: the
 * source bootstrap does not map them).
 */
import path from 'node:path';

/**
 * The Worker `filename` and `eval` option for the worker module `name` (without extension) in
 * `dir`, the caller's `__dirname`; `callerFile` is the caller's `__filename`, whose extension
 * tells a build (`.js`) from sources (`.ts`).
 * @returns `{ filename, eval }` to spread into `new Worker(filename, { eval, ... })`.
 */
export function workerScript(dir: string, callerFile: string, name: string): { filename: string; eval: boolean } {
  if (path.extname(callerFile) !== '.ts') return { filename: path.join(dir, `${name}.js`), eval: false };
  const source = path.join(dir, `${name}.ts`);
  const filename = `
const fs = require('node:fs');
const ts = require(${JSON.stringify(require.resolve('typescript'))});
require.extensions['.ts'] = (module, filename) => {
  const out = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
    fileName: filename,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  module._compile(out.outputText, filename);
};
require(${JSON.stringify(source)});
`;
  return { filename, eval: true };
}
