// Two Jest projects: `unit` (specs next to the code, real components where they run in-process)
// and `e2e` (the whole stack as separate processes, driven over HTTP). See README "Tests".
const { pathsToModuleNameMapper } = require('ts-jest');
const { compilerOptions } = require('./tsconfig.base.json');

const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json', diagnostics: false }],
  // ESM-only packages (eventsource-parser 4) compiled to CommonJS for Jest's module loader, which
  // cannot require() an ES module without --experimental-vm-modules.
  '^.+/node_modules/eventsource-parser/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true }, diagnostics: false }],
};
const transformIgnorePatterns = ['/node_modules/(?!eventsource-parser/)'];
const moduleNameMapper = pathsToModuleNameMapper(compilerOptions.paths, { prefix: '<rootDir>/' });

module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: '<rootDir>/test/node-environment.js',
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/apps/**/*.spec.ts', '<rootDir>/libs/**/*.spec.ts', '<rootDir>/packages/*/src/**/*.spec.ts', '<rootDir>/test/deploy/**/*.spec.ts', '<rootDir>/test/tools/**/*.spec.ts'],
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/e2e/global-setup.mjs',
      globalTeardown: '<rootDir>/test/e2e/global-teardown.mjs',
    },
  ],
};
