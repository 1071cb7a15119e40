#!/usr/bin/env node
// Starts a local stack in this process for a caller in another process (a test that cannot load
// ES modules, a script): options as JSON in KB_STACK_OPTIONS ({ dataDir, env, ... } as for
// startStack), prints one line `READY {"baseUrl":…,"databaseUrl":…}` on stdout, stops on SIGTERM
// or when stdin closes (the caller died).
import { ensureSystemPackages } from './bootstrap.mjs';
import { startStack } from './stack.mjs';

const options = JSON.parse(process.env.KB_STACK_OPTIONS ?? '{}');
const { natsServer } = ensureSystemPackages();
const stack = await startStack({ quiet: true, ...options, natsServer });
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.resume();
process.stdout.write(`READY ${JSON.stringify({ baseUrl: stack.baseUrl, databaseUrl: stack.databaseUrl })}\n`);
