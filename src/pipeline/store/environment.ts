/**
 * Environment facts of a run, recorded additively in `manifest.json` so a rerun can name what
 * changed and a golden can be filed per environment: CPU model and hardware class, framework
 * versions (Python, torch and DeepSpeed when a phase runs `python`), the environment variables
 * that matter, and per tool the digest and git state of its declared code inputs.
 *
 * @module
 */

import { basename, dirname, join, resolve } from "node:path";
import { redactEnv } from "../../process/mod.ts";
import type { PhaseSpec } from "../../types/mod.ts";
import { type CodeDigests, sharedCodeDigest } from "./cache.ts";
import { expandEnv } from "./expand_env.ts";
import { sha256Hex } from "./sha256.ts";

/** Git state of one code input that lives in a git work tree. */
export interface CodeInputGit {
  /** Top of the work tree. */
  repo: string;
  /** `HEAD` commit. */
  commit: string | null;
  /** Uncommitted changes to tracked files. */
  dirty: boolean | null;
}

/** The code one tool (trainer, converter, planner) runs. */
export interface ToolCode {
  /** Declared code inputs, as written. */
  inputs: string[];
  /** Content digest (the one the cache key uses). */
  digest: string;
  /** Git state per input that is (inside) a git work tree. */
  git: Record<string, CodeInputGit>;
}

/** Facts about the machine and software a run used. */
export interface EnvironmentFacts {
  /** CPU model name (Linux `/proc/cpuinfo`), null when unknown. */
  cpu_model: string | null;
  /** Logical CPUs. */
  cpu_count: number | null;
  /** `gpu-<name>` when `nvidia-smi` names a GPU, else `cpu-<arch>`. */
  hardware_class: string;
  /** Framework versions: always `deno`; `python`, `torch`, `deepspeed` for python trainers. */
  frameworks: Record<string, string>;
  /**
   * Versions per Python environment, when phases run under more than one (a resume under another
   * DeepSpeed version): the interpreter path → its `python`, `torch`, `deepspeed` versions.
   */
  python_envs?: Record<string, Record<string, string>>;
  /** Variables that matter (referenced by `${env.NAME}` or known to change numerics), redacted. */
  variables: Record<string, string>;
  /** Code per tool. */
  code: Record<string, ToolCode>;
}

/** Variables known to change numerics or data order even when no template names them. */
const NUMERIC_VARIABLES: readonly string[] = [
  "CUBLAS_WORKSPACE_CONFIG",
  "CUDA_VISIBLE_DEVICES",
  "NVIDIA_TF32_OVERRIDE",
  "OMP_NUM_THREADS",
  "MKL_NUM_THREADS",
  "PYTHONHASHSEED",
  "NCCL_ALGO",
  "NCCL_PROTO",
  "TORCH_DETERMINISTIC",
];

async function output(argv: string[], cwd?: string): Promise<string | null> {
  try {
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd,
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null; // program not installed
  }
}

async function cpuModel(): Promise<string | null> {
  try {
    const text = await Deno.readTextFile("/proc/cpuinfo");
    return /^model name\s*:\s*(.+)$/m.exec(text)?.[1].trim() ?? null;
  } catch {
    return null;
  }
}

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
}

async function hardwareClass(): Promise<string> {
  const gpu = await output(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]);
  const first = gpu?.split("\n")[0]?.trim();
  return first ? `gpu-${slug(first)}` : `cpu-${Deno.build.arch}`;
}

/** Python, torch and DeepSpeed versions seen by a python program (metadata only, no import). */
async function pythonVersions(python: string): Promise<Record<string, string>> {
  const script = [
    "import json, sys",
    "from importlib import metadata",
    "out = {'python': sys.version.split()[0]}",
    "for name in ('torch', 'deepspeed'):",
    "    try: out[name] = metadata.version(name)",
    "    except Exception: pass",
    "print(json.dumps(out))",
  ].join("\n");
  const text = await output([python, "-c", script]);
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}

/** Git state of the work tree holding `path`, or null outside git. */
async function gitOf(path: string): Promise<CodeInputGit | null> {
  let dir = path;
  try {
    if ((await Deno.stat(path)).isFile) dir = dirname(path);
  } catch {
    return null;
  }
  const repo = await output(["git", "-C", dir, "rev-parse", "--show-toplevel"]);
  if (repo === null) return null;
  const commit = await output(["git", "-C", dir, "rev-parse", "HEAD"]);
  const status = await output(["git", "-C", dir, "status", "--porcelain", "--untracked-files=no"]);
  return { repo, commit, dirty: status === null ? null : status.length > 0 };
}

/** The folder a code input points at: a path, or the `-C <dir>` of a `!git` command. */
export function codeInputDir(
  input: string,
  baseDir: string,
  env: Record<string, string>,
): string | null {
  const expanded = expandEnv(input.startsWith("!") ? input.slice(1) : input, env).trim();
  if (!input.startsWith("!")) return resolve(baseDir, expanded);
  const argv = expanded.split(/\s+/);
  const c = argv.indexOf("-C");
  return basename(argv[0]) === "git" && c > 0 && argv[c + 1] ? resolve(baseDir, argv[c + 1]) : null;
}

/** Names referenced as `${env.NAME}` anywhere in a text (the resolved experiment). */
export function referencedVariables(text: string): string[] {
  return [...new Set([...text.matchAll(/\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]))]
    .sort();
}

/**
 * Collects the facts of a run about to execute `phases`. `experimentText` is the resolved
 * experiment, scanned for `${env.NAME}` references; `digests` shares the code digests with the
 * cache keys.
 */
export async function collectEnvironment(
  phases: readonly PhaseSpec[],
  experimentText: string,
  baseDir: string,
  harnessEnv: Record<string, string>,
  digests: CodeDigests = new Map(),
): Promise<EnvironmentFacts> {
  const frameworks: Record<string, string> = { deno: Deno.version.deno };
  const pythons = [...new Set(phases.map((p) => pythonOf(p.argv[0])).filter((p) => p !== null))];
  const [cpu, hw, ...versions] = await Promise.all([
    cpuModel(),
    hardwareClass(),
    ...pythons.map(pythonVersions),
  ]);
  // The first phase's Python names the frameworks (the golden environment key); every other
  // environment a phase runs under is recorded beside it.
  Object.assign(frameworks, versions[0] ?? {});
  const names = new Set([...referencedVariables(experimentText), ...NUMERIC_VARIABLES]);
  const variables: Record<string, string> = {};
  for (const name of [...names].sort()) {
    if (harnessEnv[name] !== undefined) variables[name] = harnessEnv[name];
  }
  const code: Record<string, ToolCode> = {};
  // A preset's tools share their inputs: digest each input set and probe each folder once.
  const gits = new Map<string, Promise<CodeInputGit | null>>();
  for (const spec of phases) {
    if (code[spec.tool]) continue;
    const git: Record<string, CodeInputGit> = {};
    for (const input of spec.codeInputs) {
      const dir = codeInputDir(input, baseDir, harnessEnv);
      if (dir === null) continue;
      if (!gits.has(dir)) gits.set(dir, gitOf(dir));
      const state = await gits.get(dir)!;
      if (state) git[input] = state;
    }
    const digest = await sharedCodeDigest(digests, spec.codeInputs, baseDir, harnessEnv);
    code[spec.tool] = { inputs: [...spec.codeInputs], digest, git };
  }
  const facts: EnvironmentFacts = {
    cpu_model: cpu,
    cpu_count: navigator.hardwareConcurrency ?? null,
    hardware_class: hw,
    frameworks,
    variables: redactEnv(variables),
    code,
  };
  if (pythons.length > 1) {
    facts.python_envs = Object.fromEntries(pythons.map((p, i) => [p, versions[i]]));
  }
  return facts;
}

/**
 * The interpreter a program runs under: itself when it is `python*`, the venv's `python` beside
 * a venv launcher (`torchrun`, `deepspeed`), else null.
 */
export function pythonOf(program: string): string | null {
  const name = basename(program);
  if (/^python[0-9.]*$/.test(name)) return program;
  if (name === "torchrun" || name === "deepspeed") return join(dirname(program), "python");
  return null;
}

/**
 * The golden environment key of a run: `<hardware class>.code-<12 hex>.fw-<8 hex>` from the
 * trainer's code digest and the framework versions (docs/experiment-files.md, "Goldens").
 */
export async function environmentKey(facts: EnvironmentFacts): Promise<string> {
  const code = (facts.code.trainer?.digest ?? "none").slice(0, 12);
  const fw = Object.entries(facts.frameworks).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`).join(",");
  return `${facts.hardware_class}.code-${code}.fw-${(await sha256Hex(fw)).slice(0, 8)}`;
}
