// ESLint (`npm run lint`; `npm test` runs it once per CI, tools/test.mjs): typescript-eslint's
// recommended type-checked rules on the TypeScript of apps/, libs/, packages/, test/ and tools/,
// the plain recommended rules on their JavaScript, and Nx's module boundaries on the tags the
// project.json files declare. Formatting is Prettier's (.prettierrc.json): eslint-config-prettier,
// last, turns off every rule it would contradict. README "Engineering" says how to run both.
import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const TS = ['**/*.ts', '**/*.tsx', '**/*.mts', '**/*.cts'];
const JS = ['**/*.js', '**/*.mjs', '**/*.cjs'];
const SPECS = ['**/*.spec.ts', '**/*.medium-spec.ts', '**/*.e2e-spec.ts', '**/*.contract.ts'];

/**
 * Nx's module boundaries on the tags of the project.json files: apps depend on libs and the client
 * packages, libs only on libs, the client packages (published to npm) only on each other, the
 * end-to-end tests on libs and clients; no project imports an app (Nx's own rule) or the
 * end-to-end tests. tools/ is no Nx project: the repository's scripts (build, start, bench, eval)
 * compose the whole stack by design, so the rule does not apply there. `extraTags` widens a tag's
 * list, `allow` lets imports matching a pattern (a regular expression) through.
 */
function boundaries({ extraTags = {}, allow = [] } = {}) {
  const only = {
    'type:app': ['type:lib', 'type:client'],
    'type:lib': ['type:lib'],
    'type:client': ['type:client'],
    'type:e2e': ['type:lib', 'type:client', 'type:test-support'],
    'type:test-support': [],
  };
  const depConstraints = Object.entries(only).map(([sourceTag, tags]) => ({ sourceTag, onlyDependOnLibsWithTags: [...tags, ...(extraTags[sourceTag] ?? [])] }));
  return ['error', { allow, depConstraints }];
}

export default defineConfig(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '.nx/**',
      'coverage/**',
      // Generated at build, never committed (tools/proto-gen.mjs, packages/sdk/scripts/generate.mjs).
      'libs/proto/src/gen/**',
      'packages/sdk/src/generated/**',
      // Python training scripts and model data live beside the models; no JavaScript to lint there but the trainers.
      'libs/text/models/**/*.json',
      // The small language model server installs its own dependencies (its own lockfile).
      'tools/llm-server/node_modules/**',
    ],
  },
  {
    files: [...TS, ...JS],
    extends: [js.configs.recommended],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: TS,
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: {
          // The client packages' specs: their tsconfig.json (the build's) leaves them out, and no other tsconfig.json
          // holds them; they get the root's compiler options, as Jest's ts-jest gives them (tsconfig.spec.json).
          allowDefaultProject: ['packages/*/src/*.spec.ts'],
          defaultProject: 'tsconfig.spec.json',
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    files: JS,
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['apps/web/src/**'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: [...TS, ...JS],
    plugins: { '@nx': nx },
    rules: { '@nx/enforce-module-boundaries': boundaries() },
  },
  {
    // Tests (unit, medium, end-to-end) may use the shared test harnesses (test/medium, test/support)
    // and the stack scripts (tools/lib), and may import an app's sources for a cross-check: the SDK's
    // specs check it against the service's own lists (content types, error codes) and webhook signer,
    // the gateway's against the documents service's, the end-to-end tests set up and read the stack's
    // state with the apps' own repositories (Nx forbids importing an app outright, whatever the tags).
    // Only a test may make these imports: none of them ships.
    files: [...SPECS, 'test/**'],
    rules: {
      '@nx/enforce-module-boundaries': boundaries({
        extraTags: { 'type:app': ['type:test-support'], 'type:lib': ['type:test-support'], 'type:client': ['type:lib', 'type:test-support'] },
        allow: ['^(\\.\\./)+test/(medium|support)/', '^(\\.\\./)+tools/lib/', '^(\\.\\./)+apps/'],
      }),
    },
  },
  {
    // The model trainers beside each model (libs/text/models/*/train) are scripts run by hand
    // (`npm run train:*`) that start the stack with tools/lib, not part of the library.
    files: ['libs/text/models/**'],
    rules: { '@nx/enforce-module-boundaries': boundaries({ allow: ['^(\\.\\./)+tools/lib/'] }) },
  },
  {
    // The SDK's examples import the package by its name, as a user's code does.
    files: ['packages/sdk/examples/**'],
    rules: { '@nx/enforce-module-boundaries': boundaries({ allow: ['@kb-platform/sdk'] }) },
  },
  {
    // Tests read untyped JSON (supertest's res.body and fetch's json() are `any`) and check its
    // shape with expect() at run time; typing every response body would add casts, not safety.
    files: [...SPECS, 'test/**', '**/testing/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  prettier,
);
