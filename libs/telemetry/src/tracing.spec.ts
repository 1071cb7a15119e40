import { batchOptionsFromEnv, samplerFromEnv } from './tracing';

describe('samplerFromEnv (OTEL_TRACES_SAMPLER, OpenTelemetry specification names)', () => {
  it('defaults to parent-based always-on', () => {
    expect(samplerFromEnv({}).toString()).toBe(
      'ParentBased{root=AlwaysOnSampler, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}',
    );
  });

  it('builds each named sampler with its ratio', () => {
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'always_off' }).toString()).toBe('AlwaysOffSampler');
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'ALWAYS_ON' }).toString()).toBe('AlwaysOnSampler');
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).toString()).toBe('TraceIdRatioBased{0.25}');
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }).toString()).toMatch(
      /^ParentBased\{root=TraceIdRatioBased\{0\.1\}/,
    );
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' }).toString()).toMatch(/^ParentBased\{root=AlwaysOffSampler/);
  });

  it('refuses an unknown sampler or a ratio outside [0, 1], naming the variable', () => {
    expect(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toThrow(/OTEL_TRACES_SAMPLER "jaeger_remote" is not supported/);
    expect(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow(
      /OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/,
    );
    expect(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  });
});

describe('batchOptionsFromEnv (OTEL_BSP_*)', () => {
  it('reads the four numbers and leaves unset or invalid ones to the SDK defaults', () => {
    const exporter = {};
    expect(batchOptionsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'x' }, exporter)).toEqual({
      exporter,
      scheduledDelayMillis: 200,
      exportTimeoutMillis: undefined,
      maxQueueSize: 100,
      maxExportBatchSize: undefined,
    });
  });
});
