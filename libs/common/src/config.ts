import { z } from 'zod';

/**
 * Parses environment variables with a zod schema at boot and fails fast, naming every invalid
 * variable. Each service declares one schema and reads config only through the typed result.
 *
 * @throws Error listing `NAME: problem` for each invalid variable.
 */
export function loadConfig<T extends z.ZodRawShape>(shape: T, env: NodeJS.ProcessEnv = process.env): z.infer<z.ZodObject<T>> {
  const result = z.object(shape).safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** Common zod helpers for env vars. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  int: (fallback: number) => z.coerce.number().int().default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  string: (fallback: string) => z.string().min(1).default(fallback),
  url: () => z.url(),
};
