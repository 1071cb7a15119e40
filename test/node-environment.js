// Jest's node environment runs each test file in its own VM context, with its own typed-array
// constructors. onnxruntime-node (the in-process embedding model) checks tensor data with
// `instanceof Float32Array` against the main realm's constructors and refuses the VM's. This
// environment hands the test context the main realm's typed arrays, so real models run in tests.
const { TestEnvironment } = require('jest-environment-node');

const TYPED_ARRAYS = [
  'ArrayBuffer',
  'SharedArrayBuffer',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
];

class RealmTypedArraysEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of TYPED_ARRAYS) this.global[name] = globalThis[name];
  }
}

module.exports = RealmTypedArraysEnvironment;
