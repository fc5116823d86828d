/**
 * Variable expansion in declared code inputs (`cache.code_inputs`): `$NAME` and `${env.NAME}`,
 * the same for the cache key and for the environment facts that record it.
 *
 * @module
 */

/** `$NAME` and `${env.NAME}` in a code input, expanded from `env` (unset names become empty). */
export function expandEnv(text: string, env: Record<string, string>): string {
  return text.replace(
    /\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_m, a, b) => env[a ?? b] ?? "",
  );
}
