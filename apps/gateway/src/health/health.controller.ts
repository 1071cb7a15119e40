import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
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
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  @Public()
  @Get('readyz')
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
