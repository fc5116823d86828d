/**
 * An experiment compiled once into its plan: the phase graph, `resolvePlan`, the save steps, the
 * checkpoint read-back and the devices each phase asks for.
 *
 * @module
 */

export { readerPythonOf } from "./checkpoint_read_back.ts";
export { deviceDemand } from "./device_demand.ts";
export { mergeArgs, phaseGraph, programArgs, programEntry, trainerPreset } from "./phase_graph.ts";
export { lastSave, resumeFromStep, saveSteps } from "./save_steps.ts";
