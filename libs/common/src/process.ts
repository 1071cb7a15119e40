import { Logger } from './logger';
import { tracingState } from '@kb/telemetry'; // [telemetry] flush spans at shutdown

/**
 * Runs a service's main function and wires graceful shutdown: on SIGINT/SIGTERM the returned
 * `stop` is awaited (bounded by 15 s), buffered trace spans are exported, and the process exits 0.
 * A failing start exits 1 with the error logged, so a supervisor sees it.
 */
export function runService(logger: Logger, main: () => Promise<() => Promise<void>>): void {
  let stop: (() => Promise<void>) | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => process.exit(1), 15_000);
    try {
      await stop?.();
    } catch (e) {
      logger.error({ err: e }, 'error during shutdown');
    }
    await tracingState()
      ?.shutdown()
      .catch(() => undefined); // [telemetry] export buffered spans
    clearTimeout(timer);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection'));
  main().then(
    (s) => {
      stop = s;
      logger.info('started');
    },
    (error) => {
      logger.fatal({ err: error }, 'failed to start');
      process.exit(1);
    },
  );
}
