/**
 * Trainer presets: each trainer family the harness can launch without a `command:` template is
 * one {@link PresetDescriptor}. The experiment schema takes its `preset:` names from here.
 *
 * @module
 */

import type { PresetDescriptor } from "./preset.ts";
import { DEEPSPEED_PRESET } from "./deepspeed_preset.ts";
import { HF_PRESET } from "./hf_preset.ts";
import { REFERENCE_PRESET } from "./reference_preset.ts";

export * from "./preset.ts";
export { PROJECT_DIR } from "./project_dir.ts";
export * from "./checkpoint_readers.ts";
export { REFERENCE_CLI, REFERENCE_PRESET } from "./reference_preset.ts";
export { DEEPSPEED_PRESET, DEEPSPEED_VENV } from "./deepspeed_preset.ts";
export { HF_PRESET, HF_TENSORBOARD_DIR, HOOKS_VENV } from "./hf_preset.ts";

/** Every preset by name. */
export const PRESETS: Readonly<Record<string, PresetDescriptor>> = Object.freeze({
  reference: REFERENCE_PRESET,
  deepspeed: DEEPSPEED_PRESET,
  hf: HF_PRESET,
});

/** The names `preset:` accepts. */
export const PRESET_NAMES = Object.keys(PRESETS) as [string, ...string[]];

/** The preset of that name, or undefined. */
export function presetNamed(name: string | undefined): PresetDescriptor | undefined {
  return name !== undefined && Object.hasOwn(PRESETS, name) ? PRESETS[name] : undefined;
}
