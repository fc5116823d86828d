/**
 * The reference trainer's checkpoints: the DeepSpeed-style checkpoint folder, safetensors, the
 * checkpoint's files and markers, the universal converter and the resume loaders (native,
 * universal, plan).
 *
 * @module
 */

export { readNativeMetadata, saveNative, tagOf } from "./checkpoint.ts";
export { CRASH_IN_SAVE_ENV, NATIVE_MARKER } from "./files.ts";
export { resolveResume, resumeLoader } from "./resume.ts";
export { convertToUniversal } from "./universal.ts";
