/**
 * Side-effect entry: starts tracing (see `startTracing`) before anything else is loaded. It must be
 * the FIRST import of a service's main.ts, so that `@grpc/grpc-js` and `http` are instrumented when
 * they are first required. The service name is OTEL_SERVICE_NAME, else the app folder of the
 * entry point (`dist/apps/<service>/src/main.js`), else `kb-platform`.
 */
import { startTracing } from './tracing';

const fromPath = /[\\/]apps[\\/]([^\\/]+)[\\/]src[\\/]/.exec(process.argv[1] ?? '')?.[1];
startTracing(process.env.OTEL_SERVICE_NAME || fromPath || 'kb-platform');
