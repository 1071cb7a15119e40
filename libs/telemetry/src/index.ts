export * from './tracing';
export * from './metrics';
