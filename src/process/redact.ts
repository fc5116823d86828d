/**
 * Redaction of secret-looking environment values before they are written to manifests or reports.
 *
 * @module
 */

/**
 * A word of a name that marks a secret: it **ends** with one of these (`HF_TOKEN`, `apiKey`,
 * `PGPASSWORD`, `AWS_SECRET_ACCESS_KEY`), any case. A word that merely contains one in the middle
 * (`TOKENIZERS_PARALLELISM`, `tokenizer_name`, `KEYBOARD_LAYOUT`) does not, nor does the count
 * word `tokens` (`max_new_tokens`).
 */
const SECRET_WORD_PATTERN: RegExp = /(?:token|keys?|secrets?|passwords?|passwd|credentials?)$/i;

/**
 * The words of a variable or flag name: split at every character that is not a letter or digit
 * and at each lower-to-upper case change (`hf_token` → hf, token; `apiKey` → api, Key).
 */
export function nameWords(name: string): string[] {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").split(/[^A-Za-z0-9]+/).filter((w) => w);
}

/** The value that replaces a secret. */
export const REDACTED = "<redacted>";

/**
 * Copy `env`, replacing the value of every variable whose name matches
 * {@linkcode isSecretName} with {@linkcode REDACTED}. The input is not modified; key order
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

/**
 * Whether a variable or flag name looks like it holds a secret: one of its
 * {@linkcode nameWords} ends with a {@linkcode SECRET_WORD_PATTERN} word.
 *
 * @example
 * ```ts
 * isSecretName("HF_TOKEN"); // true
 * isSecretName("TOKENIZERS_PARALLELISM"); // false
 * ```
 */
export function isSecretName(name: string): boolean {
  return nameWords(name).some((word) => SECRET_WORD_PATTERN.test(word));
}
