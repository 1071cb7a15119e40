import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthView, ReadinessView } from '../common/api-models';
import { ApiEnvelope } from '../common/openapi';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { Public } from '../common/http-context';
import { HEALTH_TARGETS } from '../common/tokens';
import { checkGrpcHealth } from './grpc-health';

export interface HealthTargets {
  database: DataSource;
  /** service name → gRPC address */
  services: Record<string, string>;
}

/** Liveness (`/healthz`) and readiness (`/readyz`: database and every backing service). */
@ApiTags('Health')
@Controller()
export class HealthController {
  constructor(@Inject(HEALTH_TARGETS) private readonly targets: HealthTargets) {}

  @Public()
  @Get('healthz')
  @ApiOperation({ summary: 'Liveness: the process is up (no key needed)' })
  @ApiEnvelope(HealthView)
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  @Public()
  @Get('readyz')
  @ApiOperation({ summary: 'Readiness: database and every backing service reachable (no key needed)' })
  @ApiEnvelope(ReadinessView, { description: 'Ready.' })
  @ApiEnvelope(ReadinessView, { status: 503, description: 'Not ready: `checks` says which dependency is unavailable.' })
  async readyz(@Res({ passthrough: true }) reply: FastifyReply) {
    const checks: Record<string, 'ok' | 'unavailable'> = {};
    const db = this.targets.database.query('SELECT 1').then(
      () => (checks.database = 'ok'),
      () => (checks.database = 'unavailable'),
    );
    const services = Object.entries(this.targets.services).map(async ([name, address]) => {
      checks[name] = (await checkGrpcHealth(address, 2000)) ? 'ok' : 'unavailable';
    });
    await Promise.all([db, ...services]);
    const ready = Object.values(checks).every((v) => v === 'ok');
    reply.status(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not_ready', checks };
  }
}
