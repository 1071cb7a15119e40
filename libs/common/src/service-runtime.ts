import type { NatsConnection } from 'nats';
import type { DataSource } from 'typeorm';
import type { z } from 'zod';
import { startMetricsServer } from '@kb/telemetry'; // [telemetry]
import { env, loadConfig } from './config';
import { AsyncClient, createAsyncClient, startGrpcServer } from './grpc';
import { createLogger, Logger, LoggerOptions } from './logger';
import { connectNats, ensureStream } from './nats';
import { startOutboxRelay } from './outbox';
import { runService } from './process';
import { sharedEnv } from './service-env';

/** What {@link bootService} needs to know about a service. */
export interface BootOptions<T extends z.ZodRawShape> {
  /**
   * The service's name (`agent`, `documents`, ...): its logger's `service` field, the `service`
   * label of its metrics, its NATS connection name, and the prefix of its port variables.
   */
  name: string;
  /**
   * Default TCP port of the service's Prometheus /metrics listener, read from `<NAME>_METRICS_PORT`
   * (9460…9466, the README's configuration table); never the public port.
   */
  metricsPort: number;
  /**
   * Default port of the service's gRPC server, read from `<NAME>_GRPC_PORT` (50051…50056, the
   * README's configuration table) and bound on `GRPC_HOST` (`sharedEnv.grpcHost`) by
   * {@link ServiceRuntime.serveGrpc}; omitted by a service without a gRPC server (the gateway).
   */
  grpcPort?: number;
  /**
   * The service's own settings: a zod shape of environment variables (`sharedEnv` groups spread
   * in, plus its own), validated at start together with the gRPC and observability ones; the
   * typed result is {@link ServiceContext.config}.
   */
  env: T;
  /** Options of the service's logger (the gateway buffers its access log); default: none. */
  logger?: LoggerOptions;
}

/** What a service's main function is given by {@link bootService}. */
export interface ServiceContext<C> {
  /** Opens the shared resources, each closed at shutdown. */
  runtime: ServiceRuntime;
  /** The service's logger (`runtime.logger`). */
  logger: Logger;
  /** The service's settings, parsed from the environment with its `env` shape (BootOptions.env). */
  config: C;
}

/**
 * A gRPC server started by {@link ServiceRuntime.serveGrpc}: the options of `startGrpcServer`
 * without the logger and the address (those of the runtime).
 */
type GrpcServeOptions = Omit<Parameters<typeof startGrpcServer>[0], 'logger' | 'host' | 'port'>;

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
    /** Where {@link serveGrpc} binds: GRPC_HOST and `<NAME>_GRPC_PORT`; none for a service without a gRPC server. */
    private readonly grpcAddress?: { host: string; port: number },
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
   * service's logger, on GRPC_HOST and `<NAME>_GRPC_PORT` (BootOptions.grpcPort); shut down
   * (in-flight calls drained, up to 10 s) right after the metrics listener, before anything else.
   * One per process.
   * @throws Error when the service was booted without `grpcPort`; the bind error (e.g. EADDRINUSE), which fails the start.
   */
  async serveGrpc(options: GrpcServeOptions): ReturnType<typeof startGrpcServer> {
    if (!this.grpcAddress) throw new Error(`${this.name}: serveGrpc needs bootService's grpcPort option`);
    const server = await startGrpcServer({ ...options, ...this.grpcAddress, logger: this.logger });
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
 * around the service's own `main`. It creates the service's logger, validates the service's
 * settings (`options.env`), its gRPC address (GRPC_HOST, `<NAME>_GRPC_PORT`, with `grpcPort`) and
 * the observability variables (`sharedEnv.telemetry`, `<NAME>_METRICS_PORT`) in one `loadConfig`,
 * so that one "Invalid configuration" message names every invalid variable, runs `main` with a
 * {@link ServiceRuntime} and the typed settings, then starts the Prometheus /metrics listener
 * (@kb/telemetry) and logs `started`. On SIGINT/SIGTERM (`runService`: bounded by 15 s, exit 0)
 * the metrics listener is closed, then the gRPC server, then the stop `main` returned, then the
 * runtime's resources, last opened first. A start that fails (invalid configuration, unreachable
 * database...) exits 1 with `failed to start` logged.
 *
 * @param main the service's wiring; returns its own stop (consumers, timers), or nothing.
 */
export function bootService<T extends z.ZodRawShape>(
  options: BootOptions<T>,
  main: (service: ServiceContext<z.infer<z.ZodObject<T>>>) => Promise<(() => Promise<void>) | void>,
): void {
  const logger = createLogger(options.name, options.logger);
  const metricsPortVariable = `${options.name.toUpperCase()}_METRICS_PORT`;
  const grpcPortVariable = `${options.name.toUpperCase()}_GRPC_PORT`;
  runService(logger, async () => {
    // One schema, so that one message names every invalid variable; the ports' keys are the service's own.
    const grpcShape = options.grpcPort === undefined ? {} : { ...sharedEnv.grpcHost, [grpcPortVariable]: env.port(options.grpcPort) };
    const shape = { ...options.env, ...grpcShape, ...sharedEnv.telemetry, [metricsPortVariable]: env.port(options.metricsPort) };
    const parsed = loadConfig(shape) as Record<string, unknown>;
    const telemetry = parsed as z.infer<z.ZodObject<typeof sharedEnv.telemetry>>; // [telemetry]
    const grpcAddress = options.grpcPort === undefined ? undefined : { host: parsed.GRPC_HOST as string, port: parsed[grpcPortVariable] as number };
    const runtime = new ServiceRuntime(options.name, logger, grpcAddress);
    const stop = await main({ runtime, logger, config: parsed as z.infer<z.ZodObject<T>> });
    // [telemetry] Prometheus /metrics on its own port
    const metricsServer = await startMetricsServer({
      service: options.name,
      enabled: telemetry.METRICS_ENABLED,
      host: telemetry.METRICS_HOST,
      port: parsed[metricsPortVariable] as number,
    });
    return async () => {
      await metricsServer.close(); // [telemetry]
      await runtime.shutdown(stop);
    };
  });
}
