import { AppError, ErrorCode } from '@kb/common';
import { Controller, HttpCode, Inject } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import { HealthView, ReadinessView } from '../common/api-models';
import { ApiGet } from '../common/openapi';
import { DataSource } from 'typeorm';
import { HEALTH_TARGETS } from '../common/tokens';
import { checkGrpcHealth } from './grpc-health';

export interface HealthTargets {
  database: DataSource;
  /** service name → gRPC address */
  services: Record<string, string>;
  /**
   * The gateway's NATS connection (nats.js `NatsConnection`): `rtt()` is a PING/PONG round trip to
   * the server, and rejects at once while the client is disconnected or closed. Absent: not checked.
   */
  nats?: { rtt(): Promise<number> };
}

/** Longest wait (ms) for each readiness check (the database, NATS, each service's gRPC health). */
const READY_CHECK_TIMEOUT_MS = 2000;

/**
 * Resolves true when NATS answers a round trip within {@link READY_CHECK_TIMEOUT_MS}; false when
 * the connection is down (the client reconnecting, or closed) or slower than that.
 */
function natsReachable(nats: { rtt(): Promise<number> }): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), READY_CHECK_TIMEOUT_MS);
    nats
      .rtt()
      .then(
        () => resolve(true),
        () => resolve(false),
      )
      .finally(() => clearTimeout(timer));
  });
}

/**
 * Liveness (`/healthz`) and readiness (`/readyz`: database, NATS and every backing service; NATS
 * since issue 29: while it is down, processing, triggers and batches answer 503, so the gateway is
 * not ready). Not ready is a 503 SERVICE_UNAVAILABLE error envelope whose message names the unavailable dependencies.
 * Both are public routes (no API key): listed in `PUBLIC_ROUTES` (common/request-policy.ts).
 */
@ApiTags('Health')
@Controller()
export class HealthController {
  constructor(@Inject(HEALTH_TARGETS) private readonly targets: HealthTargets) {}

  @ApiGet('healthz', { operationId: 'checkLiveness', summary: 'Liveness: the process is up (no key needed)' }, HealthView)
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  @ApiGet(
    'readyz',
    { operationId: 'checkReadiness', summary: 'Readiness: database, NATS and every backing service reachable (no key needed)' },
    ReadinessView,
    { description: 'Ready: every dependency answered.' },
  )
  @ApiResponse({ status: 503, description: '`SERVICE_UNAVAILABLE`: not ready; `error.message` names every unavailable dependency.' })
  @HttpCode(200)
  async readyz() {
    const checks: Record<string, 'ok' | 'unavailable'> = {};
    const db = this.targets.database.query('SELECT 1').then(
      () => (checks.database = 'ok'),
      () => (checks.database = 'unavailable'),
    );
    const nats = this.targets.nats;
    const messaging = nats ? natsReachable(nats).then((ok) => (checks.nats = ok ? 'ok' : 'unavailable')) : undefined;
    const services = Object.entries(this.targets.services).map(async ([name, address]) => {
      checks[name] = (await checkGrpcHealth(address, READY_CHECK_TIMEOUT_MS)) ? 'ok' : 'unavailable';
    });
    await Promise.all([db, messaging, ...services]);
    const down = ['database', ...(nats ? ['nats'] : []), ...Object.keys(this.targets.services)].filter((name) => checks[name] !== 'ok');
    if (down.length > 0) throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, notReadyMessage(down));
    return { status: 'ready', checks };
  }
}

/**
 * The message of `/readyz`'s 503, naming every unavailable dependency (`database`, `nats` or a service
 * name) in the order given, e.g. ['database', 'check'] → "Not ready: the database and the check
 * service are unavailable."
 */
export function notReadyMessage(down: string[]): string {
  const names = down.map((n) => (n === 'database' ? 'the database' : n === 'nats' ? 'NATS' : `the ${n} service`));
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  return `Not ready: ${list} ${names.length === 1 ? 'is' : 'are'} unavailable.`;
}
