/**
 * `${name}` placeholders in argv, env, cwd and metrics-path templates. `$${` writes a literal
 * `${`; any other `$` is literal too. `${name?}` is **optional**: an unset or empty value
 * expands to nothing, and an argv element holding an empty optional placeholder is dropped
 * whole (`"--noise=${args.noise?}"` reaches only the phases that set `noise`). Validation checks every name against the scope of the
 * program (trainer, converter or planner); the pipeline calls {@link interpolate} at run time.
 *
 * @module
 */

import { EXIT_CODES, HarnessError } from "../types/mod.ts";
import { didYouMean } from "./_did_you_mean.ts";

/** Placeholders every program may use (the trainer contract's `PARITY_*` values, and more). */
export const COMMON_PLACEHOLDERS = [
  "phase",
  "steps",
  "stop_at",
  "save_at",
  "digest_at",
  "lr_scale",
  "seed",
  "checkpoint_dir",
  "resume_from",
  "resume_kind",
  "plan",
  "metrics_file",
  "run_dir",
  "experiment",
  "venv",
  "python",
] as const;

/** Which program a template belongs to. */
export type ProgramKind = "trainer" | "converter" | "planner";

/** Fixed placeholder names per program; `args.<key>` and `env.<NAME>` come on top. */
export const PLACEHOLDERS: Readonly<Record<ProgramKind, readonly string[]>> = {
  trainer: [...COMMON_PLACEHOLDERS, "output_dir"],
  converter: [...COMMON_PLACEHOLDERS, "native", "universal"],
  planner: [...COMMON_PLACEHOLDERS, "source_checkpoint", "target", "policy", "plan_out"],
};

/** A malformed template or an unknown placeholder: an invalid experiment (exit 2). */
export class PlaceholderError extends HarnessError {
  /** Builds the error. */
  constructor(message: string) {
    super(message, EXIT_CODES.USAGE);
  }
}

/** A piece of a parsed template: literal text or a placeholder name (`optional` for `${x?}`). */
export type TemplatePart = { text: string } | { name: string; optional?: boolean };

/**
 * Splits a template into literal text and placeholders.
 *
 * @throws {PlaceholderError} for `${` without `}` or an empty `${}`.
 */
function parseTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let text = "";
  let i = 0;
  while (i < template.length) {
    if (template.startsWith("$${", i)) {
      text += "${";
      i += 3;
    } else if (template.startsWith("${", i)) {
      const end = template.indexOf("}", i + 2);
      if (end < 0) {
        throw new PlaceholderError(
          `unterminated placeholder ${template.slice(i)} (write $\${ for a literal \${)`,
        );
      }
      const name = template.slice(i + 2, end);
      if (name.trim() === "") throw new PlaceholderError("empty placeholder ${}");
      if (text !== "") parts.push({ text });
      text = "";
      if (name.endsWith("?") && name.length > 1) {
        parts.push({ name: name.slice(0, -1), optional: true });
      } else parts.push({ name });
      i = end + 1;
    } else {
      text += template[i];
      i++;
    }
  }
  if (text !== "") parts.push({ text });
  return parts;
}

/**
 * The placeholder names a template uses, in order of appearance (repeats kept once).
 *
 * @throws {PlaceholderError} when the template is malformed.
 * @example
 * ```ts
 * placeholdersIn("--out=${run_dir}/x $${HOME}"); // ["run_dir"]
 * ```
 */
export function placeholdersIn(template: string): string[] {
  const names: string[] = [];
  for (const part of parseTemplate(template)) {
    if ("name" in part && !names.includes(part.name)) names.push(part.name);
  }
  return names;
}

/**
 * Replaces every `${name}` with `vars[name]` and every `$${` with `${`.
 *
 * @throws {PlaceholderError} on an unknown name (with a did-you-mean) or a malformed template.
 * @example
 * ```ts
 * interpolate("--steps=${steps}", { steps: "40" }); // "--steps=40"
 * ```
 */
export function interpolate(template: string, vars: Record<string, string>): string {
  let out = "";
  for (const part of parseTemplate(template)) {
    if ("text" in part) {
      out += part.text;
      continue;
    }
    if (part.optional && !Object.hasOwn(vars, part.name)) continue;
    if (!Object.hasOwn(vars, part.name)) {
      throw new PlaceholderError(
        `unknown placeholder \${${part.name}}${
          didYouMean(part.name, Object.keys(vars), (s) => `\${${s}}`)
        }`,
      );
    }
    out += vars[part.name];
  }
  return out;
}

/**
 * Expands one argv template: like {@link interpolate}, but an element holding an optional
 * placeholder (`${args.noise?}`) whose value is unset or empty is dropped (an empty list), so a
 * flag meant for one resume needs no do-nothing value elsewhere.
 *
 * @example
 * ```ts
 * interpolateArg("--noise=${args.noise?}", {}); // []
 * interpolateArg("--noise=${args.noise?}", { "args.noise": "1" }); // ["--noise=1"]
 * ```
 */
export function interpolateArg(template: string, vars: Record<string, string>): string[] {
  const empty = parseTemplate(template).some((part) =>
    "name" in part && part.optional && (vars[part.name] ?? "") === ""
  );
  return empty ? [] : [interpolate(template, vars)];
}

/** What templates of one program may refer to. */
export interface PlaceholderScope {
  /** Fixed names (see {@link PLACEHOLDERS}). */
  names: readonly string[];
  /** Keys usable as `${args.<key>}`. */
  argKeys: readonly string[];
  /** Keys usable only as optional `${args.<key>?}` (set by some resumes, not by all phases). */
  optionalArgKeys?: readonly string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Checks one template against a scope; returns the problem (`unknown placeholder ${stepz} (did
 * you mean ${steps}?)`) or undefined. An optional `${args.<key>?}` whose key no phase sets is
 * accepted (it expands to nothing) unless it is a likely misspelling of a key that is set; an
 * optional fixed name (`${stepz?}`) is still an error, since no phase ever defines it.
 */
export function checkTemplate(template: string, scope: PlaceholderScope): string | undefined {
  let parts: TemplatePart[];
  try {
    parts = parseTemplate(template);
  } catch (error) {
    return (error as Error).message;
  }
  const known = [...scope.names, ...scope.argKeys.map((key) => `args.${key}`)];
  const optional = (scope.optionalArgKeys ?? []).map((key) => `args.${key}`);
  for (const part of parts) {
    if (!("name" in part)) continue;
    const name = part.name;
    if (known.includes(name)) continue;
    if (part.optional && optional.includes(name)) continue;
    if (name.startsWith("env.")) {
      if (ENV_NAME.test(name.slice(4))) continue;
      return `invalid environment variable name in \${${name}}`;
    }
    if (name.startsWith("args.")) {
      const hint = didYouMean(name, [...known, ...optional], (s) => `\${${s}}`);
      // `${args.x?}` that no phase sets is simply empty everywhere; one a letter or two away
      // from a key that exists is a typo, and says so.
      if (part.optional && hint === "") continue;
      return `unknown placeholder \${${name}}: no argument ${
        name.slice(5)
      } in the merged args${hint}`;
    }
    const owners = (Object.keys(PLACEHOLDERS) as ProgramKind[])
      .filter((kind) => PLACEHOLDERS[kind].includes(name));
    if (owners.length > 0) {
      return `unknown placeholder \${${name}} here (only the ${owners.join(" and ")} has it)`;
    }
    return `unknown placeholder \${${name}}${didYouMean(name, known, (s) => `\${${s}}`)}`;
  }
  return undefined;
}
