/**
 * DeepSpeed's names for the folders of a saved step, spelt once for the harness: the native tag
 * folder `global_step<N>` (the split's default `checkpoint_tag`) and the convert phase's
 * `global_step<N>_universal`. The trainer (`reference_trainer/checkpoints/checkpoint.ts` `tagOf`) spells the
 * native name on its own side of the process contract.
 *
 * @module
 */

/** The native tag folder of `step`: `global_step<N>`. */
export function checkpointFolder(step: number): string {
  return `global_step${step}`;
}

/** The universal checkpoint folder converted from `step`'s native one: `global_step<N>_universal`. */
export function universalFolder(step: number): string {
  return `${checkpointFolder(step)}_universal`;
}

/** Whether `name` is a folder {@linkcode universalFolder} names (any step). */
export function isUniversalFolder(name: string): boolean {
  return /^global_step\d+_universal$/.test(name);
}
