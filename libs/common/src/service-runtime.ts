import type { NatsConnection } from 'nats';
import type { DataSource } from 'typeorm';
import { startMetricsServer } from '@kb/telemetry'; // [telemetry]
import { env, loadConfig } from './config';
import { AsyncClient, createAsyncClient, startGrpcServer } from './grpc';
import { createLogger, Logger, LoggerOptions } from './logger';
import { connectNats, ensureStream } from './nats';
import { startOutboxRelay } from './outbox';
import { runService } from './process';
import { sharedEnv } from './service-env';

/** What {@link bootService} needs to know about a service. */
export interface BootOptions {
  /**
   * The service's name (`agent`, `documents`, ...): its logger's `service` field, the `service`
   * label of its metrics, its NATS connection name, and the prefix of its metrics port variable.
   */
  name: string;
  /**
   * Default TCP port of the service's Prometheus /metrics listener, read from `<NAME>_METRICS_PORT`
   * (9460…9466, the README's configuration table); never the public port.
   */
  metricsPort: number;
  /** Options of the service's logger (the gateway buffers its access log); default: none. */
  logger?: LoggerOptions;
}

/** A gRPC service served by {@link ServiceRuntime.serveGrpc} (the options of `startGrpcServer` without the logger). */
type GrpcServeOptions = Omit<Parameters<typeof startGrpcServer>[0], 'logger'>;

/**
 * The shared resources of one service process, opened through it by the service's main function
 * so that each is closed at shutdown in a fixed order (see {@link bootService}): the gRPC server
 * first, then the service's own stop (its consumers, timers, dispatcher), then what was opened
 * here, the last opened first (webhook outbox relay, NATS drain, database, gRPC clients).
 */
export class ServiceRuntime {
  /** Closers of what was opened here, in opening order (run in reverse at shutdown). */
  private readonly opened: Array<() => Promise<void> | void> = [];
  private grpc: { shutdown: () => Promise<void> } | null = null;

  constructor(
    /** The service's name (BootOptions.name). */
    readonly name: string,
    /** The service's logger (createLogger with the service's name). */
    readonly logger: Logger,
  ) {}

  /**
   * Takes the service's database as its own open function returns it (that function runs the
   * migrations and, under `--migrate-only`, exits the process: libs/common db.ts); destroyed at shutdown.
   */
  async database<D extends Pick<DataSource, 'destroy'>>(opening: Promise<D>): Promise<D> {
    const db = await opening;
    this.opened.push(() => db.destroy());
    return db;
  }

  /**
   * Connects to NATS (the connection named after the service) and creates or updates the given
   * JetStream streams, in order (`ensureStream`); the connection is drained at shutdown.
   * @param streams `[stream name, subjects]` pairs, e.g. `[DOCUMENTS_STREAM, DOCUMENTS_STREAM_SUBJECTS]` of @kb/events.
   * @throws NATS's connection error after connectNats's wait (30 s).
   */
  async nats(url: string, streams: ReadonlyArray<readonly [name: string, subjects: string[]]>): Promise<NatsConnection> {
    const nc = await connectNats(url, this.name);
    this.opened.push(() => nc.drain());
    for (const [stream, subjects] of streams) await ensureStream(nc, stream, subjects);
    return nc;
  }

  /**
   * Starts the webhook outbox relay of the service's schema (`startOutboxRelay`, docs/webhooks.md),
   * named after the service; stopped at shutdown, before NATS is drained.
   * @param options.subjectFor `webhookEventSubject` of @kb/events; options.intervalMs WEBHOOK_OUTBOX_INTERVAL_MS.
   */
  webhookOutbox(db: DataSource, nc: NatsConnection, options: { intervalMs: number; subjectFor: (type: string, resourceKey: string) => string }): void {
    const relay = startOutboxRelay({ db, nc, logger: this.logger, name: this.name, ...options });
    this.opened.push(() => relay.stop());
  }

  /** A promise-based client of another service (`createAsyncClient`); closed at shutdown. */
  client<D extends Parameters<typeof createAsyncClient>[0]>(definition: D, address: string): AsyncClient<D> {
    const client = createAsyncClient(definition, address);
    this.opened.push(() => client.close());
    return client;
  }

  /**
   * Starts the service's gRPC server (`startGrpcServer`, with the health service) with the
   * service's logger; shut down (in-flight calls drained, up to 10 s) right after the metrics
   * listener, before anything else. One per process.
   * @throws the bind error (e.g. EADDRINUSE), which fails the start.
   */
  async serveGrpc(options: GrpcServeOptions): ReturnType<typeof startGrpcServer> {
    const server = await startGrpcServer({ ...options, logger: this.logger });
    this.grpc = server;
    return server;
  }

  /** Closes the gRPC server, then runs `stop` (the service's own), then closes what was opened here, last first. */
  async shutdown(stop: (() => Promise<void>) | void): Promise<void> {
    await this.grpc?.shutdown();
    await stop?.();
    for (const close of [...this.opened].reverse()) await close();
  }
}

/**
 * Runs a service process: the start-up and shutdown every `apps/<service>/src/main.ts` shares,
 * around the service's own `main`. It creates the service's logger, validates the observability
 * variables (`sharedEnv.telemetry` and `<NAME>_METRICS_PORT`), runs `main` with a
 * {@link ServiceRuntime}, then starts the Prometheus /metrics listener (@kb/telemetry) and logs
 * `started`. On SIGINT/SIGTERM (`runService`: bounded by 15 s, exit 0) the metrics listener is
 * closed, then the gRPC server, then the stop `main` returned, then the runtime's resources, last
 * opened first. A start that fails (invalid configuration, unreachable database...) exits 1 with
 * `failed to start` logged.
 *
 * @param main the service's wiring; returns its own stop (consumers, timers), or nothing.
 */
export function bootService(options: BootOptions, main: (runtime: ServiceRuntime) => Promise<(() => Promise<void>) | void>): void {
  const logger = createLogger(options.name, options.logger);
  const metricsPortVariable = `${options.name.toUpperCase()}_METRICS_PORT`;
  runService(logger, async () => {
    // One schema, so that one message names every invalid variable; the port's key is the service's own.
    const shape = { ...sharedEnv.telemetry, [metricsPortVariable]: env.port(options.metricsPort) };
    const telemetry = loadConfig(shape) as ReturnType<typeof loadConfig<typeof sharedEnv.telemetry>> & Record<string, number>; // [telemetry]
    const runtime = new ServiceRuntime(options.name, logger);
    const stop = await main(runtime);
    // [telemetry] Prometheus /metrics on its own port
    const metricsServer = await startMetricsServer({
      service: options.name,
      enabled: telemetry.METRICS_ENABLED,
      host: telemetry.METRICS_HOST,
      port: telemetry[metricsPortVariable],
    });
    return async () => {
      await metricsServer.close(); // [telemetry]
      await runtime.shutdown(stop);
    };
  });
}
