/**
 * Redaction of secret-looking environment values before they are written to manifests or reports.
 *
 * @module
 */

/** Names whose values are treated as secrets (matched anywhere in the name, any case). */
export const SECRET_NAME_PATTERN: RegExp = /TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;

/** The value that replaces a secret. */
export const REDACTED = "<redacted>";

/**
 * Copy `env`, replacing the value of every variable whose name matches
 * {@linkcode SECRET_NAME_PATTERN} with {@linkcode REDACTED}. The input is not modified; key order
 * is kept.
 *
 * @example
 * ```ts
 * redactEnv({ HF_TOKEN: "hf_abc", PARITY_SEED: "1" });
 * // => { HF_TOKEN: "<redacted>", PARITY_SEED: "1" }
 * ```
 */
export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    out[name] = isSecretName(name) ? REDACTED : value;
  }
  return out;
}

/** Whether a variable name looks like it holds a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME_PATTERN.test(name);
}
