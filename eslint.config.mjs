// ESLint (`npm run lint`; `npm test` runs it once per CI, tools/test.mjs): typescript-eslint's
// recommended type-checked rules on the TypeScript of apps/, libs/, packages/, test/ and tools/,
// the plain recommended rules on their JavaScript, and Nx's module boundaries on the tags the
// project.json files declare. Formatting is Prettier's (.prettierrc.json): eslint-config-prettier,
// last, turns off every rule it would contradict. README "Lint and formatting" says how to run both.
import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';
import reactHooks from 'eslint-plugin-react-hooks';
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

/** The rules about `any` values, off where input is untyped by nature (see the two blocks that use it). */
const UNTYPED_INPUT_RULES_OFF = {
  '@typescript-eslint/no-explicit-any': 'off',
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
};

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
      // The small language model server installs its own dependencies (its own lockfile).
      'tools/llm-server/node_modules/**',
    ],
  },
  {
    files: [...TS, ...JS],
    extends: [js.configs.recommended],
    rules: {
      // Best-effort clean-up (`try { rmSync(...) } catch {}`) is a pattern here; an empty block
      // elsewhere is still an error.
      'no-empty': ['error', { allowEmptyCatch: true }],
      // A handler declared before the server that calls it and assigned once after cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: TS,
    extends: [tseslint.configs.recommendedTypeChecked],
    rules: {
      // Rules of recommendedTypeChecked that do not fit, each with why:
      // `async` without `await` is how this code implements Promise-returning interfaces (object
      // storage drivers, chunk stores, test doubles); it also turns a synchronous throw into a
      // rejection, which callers rely on.
      '@typescript-eslint/require-await': 'off',
      // Libraries type string unions as enums (domhandler's node types, NATS status events, Nest's
      // route parameter kinds read back as numbers from metadata keys); comparing with the literal
      // value is correct and what their docs do.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // Configured rather than off: a leading underscore marks what is unused on purpose, and a
      // rest sibling is how an object drops a field.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Rejecting with an AbortSignal's reason (typed any) or a caught error (unknown) passes the
      // original through; wrapping it would hide what the caller aborted with.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // React event handlers may be async (a form's onSubmit); a void-returning attribute is fine.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
    },
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
    // The review workspace (React): browser globals, and the two classic rules of hooks (the
    // plugin's newer React Compiler rules assume a compiler this build does not use).
    files: ['apps/web/src/**'],
    plugins: { 'react-hooks': reactHooks },
    languageOptions: { globals: { ...globals.browser } },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  {
    files: [...TS, ...JS],
    plugins: { '@nx': nx },
    rules: { '@nx/enforce-module-boundaries': boundaries() },
  },
  {
    // Tests (unit, medium, end-to-end) may use the shared test harnesses (test/medium, test/support),
    // the stack scripts (tools/lib) and the evaluations' dataset readers (tools/eval), and may import
    // an app's sources for a cross-check: the SDK's specs check it against the service's own lists
    // (content types, error codes) and webhook signer, the gateway's against the documents and retrieval services', the end-to-end tests set up and read the stack's
    // state with the apps' own repositories (Nx forbids importing an app outright, whatever the tags).
    // A lib's test helpers (src/testing, outside the build) are shared the same way. Only a test may
    // make these imports: none of them ships.
    files: [...SPECS, 'test/**'],
    rules: {
      '@nx/enforce-module-boundaries': boundaries({
        extraTags: { 'type:app': ['type:test-support'], 'type:lib': ['type:test-support'], 'type:client': ['type:lib', 'type:test-support'] },
        allow: [
          '^(\\.\\./)+test/(medium|support)/',
          '^(\\.\\./)+tools/(lib|eval)/',
          '^(\\.\\./)+apps/',
          '^(\\.\\./)+(agent|check|documents|gateway|ingestion|retrieval|webhooks)/src/',
          '^(\\.\\./)+libs/[a-z]+/src/testing/',
        ],
      }),
    },
  },
  {
    // The model trainers beside each model (libs/text/models/*/train) are scripts run by hand
    // (`npm run train:*`) that start the stack with tools/lib and read datasets with tools/eval, not
    // part of the library.
    files: ['libs/text/models/**'],
    rules: { '@nx/enforce-module-boundaries': boundaries({ allow: ['^(\\.\\./)+tools/(lib|eval)/'] }) },
  },
  {
    // The SDK's examples import the package by its name, as a user's code does.
    files: ['packages/sdk/examples/**'],
    rules: { '@nx/enforce-module-boundaries': boundaries({ allow: ['@kb-platform/sdk'] }) },
  },
  {
    // Code whose input is untyped by nature, where the no-unsafe rules would ask for a cast per
    // line: the gateway's OpenAPI post-processing walks the JSON document Nest's Swagger module
    // builds (any shape, `Json = Record<string, any>`); the CLI reads commander's parsed options
    // (`Record<string, any>`, each command its own); the evaluation harnesses read labelled
    // datasets and model output from JSON files.
    files: [
      'apps/gateway/src/common/openapi.ts',
      'apps/gateway/src/common/openapi-validation.ts',
      'packages/cli/src/main.ts',
      'packages/cli/src/webhooks.ts',
      'tools/eval/*.ts',
      'libs/text/eval/*.ts',
    ],
    rules: {
      ...UNTYPED_INPUT_RULES_OFF,
    },
  },
  {
    // Tests read untyped JSON (supertest's res.body and fetch's json() are `any`) and check its
    // shape with expect() at run time; typing every response body would add casts, not safety.
    files: [...SPECS, 'test/**', '**/testing/**'],
    rules: {
      ...UNTYPED_INPUT_RULES_OFF,
      // A failing assertion's message and a spreadsheet cell read in a test stringify whatever they got.
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
    },
  },
  prettier,
);
