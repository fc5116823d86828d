/**
 * The one redaction policy applied to every file the harness writes (resolved experiment,
 * manifest, phase.json, summary, reports): secrets are recognised by variable name, by known
 * token shapes, as credentials inside URLs, and by value — once a value is known to be secret
 * (it came from a secret-named variable, directly or through `${env.X}`, or from a URL's
 * password), it is replaced wherever it appears. Trainer logs are the trainer's own output and
 * are not touched (docs/security.md).
 *
 * @module
 */

import { isSecretName, REDACTED } from "./redact.ts";

/** Shortest secret value replaced by value (shorter ones would also hit innocent text). */
export const MIN_SECRET_CHARS = 4;

/** Well-known token shapes, replaced wherever they appear. */
export const TOKEN_PATTERNS: readonly RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{30,}\b/g,
  /\bhf_[A-Za-z0-9]{30,}\b/g, // Hugging Face
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, // AWS access key ids
  /\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b/g, // OpenAI / Anthropic style keys
  /\bxox[abprs]-[A-Za-z0-9-]{10,}\b/g, // Slack
  /\bAIza[0-9A-Za-z_-]{35}\b/g, // Google API keys
  /\bglpat-[A-Za-z0-9_-]{20,}\b/g, // GitLab
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWT
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
];

/** Values never treated as secrets by value (still redacted by name): flags and plain numbers. */
const TRIVIAL_VALUE =
  /^(?:true|false|yes|no|on|off|none|null|enabled?|disabled?|[-+]?[\d.]+(?:e[-+]?\d+)?)$/i;

/** `scheme://user:password@` — the password part is group 2. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@"']*:)([^\s@/"']+)@/gi;

/** `--api-token=VALUE` / `--password VALUE` in an argv: a flag whose name is secret-named. */
function isSecretFlag(arg: string): boolean {
  return /^--?[A-Za-z0-9_-]+$/.test(arg) && isSecretName(arg.replace(/^--?/, ""));
}

/** Known secret values plus the fixed rules; see the module documentation. */
export class RedactionPolicy {
  #values = new Set<string>();
  #sorted: string[] | null = [];

  /**
   * Treat `value` as a secret from now on; ignored when shorter than
   * {@linkcode MIN_SECRET_CHARS}, or a boolean-like word or a plain number.
   */
  addValue(value: string): void {
    if (value.length < MIN_SECRET_CHARS || value === REDACTED || this.#values.has(value)) return;
    if (TRIVIAL_VALUE.test(value)) return; // a flag or a number: replacing it would mangle files
    this.#values.add(value);
    this.#sorted = null;
  }

  /**
   * Learn the secrets of an environment: the value of every secret-named variable and every
   * password inside a URL.
   */
  addEnv(env: Readonly<Record<string, string>> | undefined): void {
    for (const [name, value] of Object.entries(env ?? {})) {
      if (typeof value !== "string") continue;
      if (isSecretName(name)) this.addValue(value);
      this.#addUrlPasswords(value);
    }
  }

  /** Learn the secrets of an argv: values of secret-named flags and URL passwords. */
  addArgv(argv: readonly string[]): void {
    argv.forEach((arg, i) => {
      const eq = arg.indexOf("=");
      if (eq > 0 && isSecretFlag(arg.slice(0, eq))) this.addValue(arg.slice(eq + 1));
      else if (isSecretFlag(arg) && argv[i + 1] !== undefined) this.addValue(argv[i + 1]);
      this.#addUrlPasswords(arg);
    });
  }

  /** Number of secret values known. */
  get size(): number {
    return this.#values.size;
  }

  /** `text` with every known secret value, token shape and URL password replaced. */
  redactText(text: string): string {
    if (text.length < MIN_SECRET_CHARS) return text;
    let out = text;
    for (const value of this.#valuesLongestFirst()) {
      if (out.includes(value)) out = out.split(value).join(REDACTED);
    }
    out = out.replace(URL_CREDENTIALS, (_m, prefix) => `${prefix}${REDACTED}@`);
    for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, REDACTED);
    return out;
  }

  /**
   * A deep copy of a JSON-like value with every string (values and keys) passed through
   * {@linkcode RedactionPolicy.redactText}; other values are kept.
   */
  redactValue<T>(value: T): T {
    return this.#redact(value, 0) as T;
  }

  #redact(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.redactText(value);
    if (value === null || typeof value !== "object" || depth > 200) return value;
    if (Array.isArray(value)) return value.map((item) => this.#redact(item, depth + 1));
    if (value instanceof Date) return value;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[this.redactText(key)] = this.#redact(item, depth + 1);
    }
    return out;
  }

  #addUrlPasswords(text: string): void {
    for (const match of text.matchAll(URL_CREDENTIALS)) this.addValue(match[2]);
  }

  #valuesLongestFirst(): string[] {
    this.#sorted ??= [...this.#values].sort((a, b) => b.length - a.length);
    return this.#sorted;
  }
}

/**
 * The process-wide policy every harness writer applies. A run adds its secrets to it before it
 * writes anything; secrets are never forgotten, so a later run in the same process (a suite)
 * redacts at least as much.
 */
export const HARNESS_REDACTION: RedactionPolicy = new RedactionPolicy();
