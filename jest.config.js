// Three Jest projects: `unit` (specs next to the code, real components where they run in-process),
// `medium` (repositories and use cases against a real PostgreSQL: one embedded server per run, one
// database per test file) and `e2e` (the whole stack as separate processes, driven over HTTP).
// See README "Tests".
const { pathsToModuleNameMapper } = require('ts-jest');
const { compilerOptions } = require('./tsconfig.base.json');

// marked (the Markdown lexer) ships only an ES module since 16; the services load it with Node's
// require(esm), which Jest's module system does not do on the Node 22 line, so its one file is
// compiled to CommonJS for the tests (transformIgnorePatterns lets that file through).
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json', diagnostics: false }],
  '/node_modules/marked/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true }, diagnostics: false }],
};
const transformIgnorePatterns = ['/node_modules/(?!marked/)'];
const moduleNameMapper = pathsToModuleNameMapper(compilerOptions.paths, { prefix: '<rootDir>/' });

module.exports = {
  // Jest's 5 s default failed real-file extraction tests on the loaded 2-core CI machine (Node 22
  // line: the legacy-.doc check of docx.spec.ts and the OSHA pages of html.spec.ts, about 4.2 s each
  // even alone). Speed lives in the benchmarks (npm run bench:*), not in test timeouts. A suite may
  // still set its own (jest.setTimeout).
  testTimeout: 30_000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: '<rootDir>/test/node-environment.js',
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: [
        '<rootDir>/apps/**/*.spec.ts',
        '<rootDir>/libs/**/*.spec.ts',
        '<rootDir>/packages/*/src/**/*.spec.ts',
        '<rootDir>/test/deploy/**/*.spec.ts',
        '<rootDir>/test/tools/**/*.spec.ts',
      ],
    },
    {
      displayName: 'medium',
      testEnvironment: '<rootDir>/test/node-environment.js',
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/apps/**/*.medium-spec.ts', '<rootDir>/libs/**/*.medium-spec.ts'],
      globalSetup: '<rootDir>/test/medium/global-setup.mjs',
      globalTeardown: '<rootDir>/test/medium/global-teardown.mjs',
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
