/**
 * Experiment files: loading (YAML/JSON), `--set` overrides, `matrix:` expansion, the zod schema
 * with path-precise messages, cross-field rules, `${placeholder}` templates, the JSON Schema and
 * the `validate` command.
 *
 * ```ts
 * import { formatValidationErrors, loadExperimentFile, validateExperiment } from "./mod.ts";
 * const result = validateExperiment(await loadExperimentFile("experiments/quickstart.yaml"), {
 *   sets: ["schedule.steps=60"],
 * });
 * ```
 *
 * @module
 */

export * from "./schema.ts";
export * from "./validation_errors.ts";
export * from "./load.ts";
export * from "./overrides.ts";
export * from "./matrix.ts";
export * from "./placeholders.ts";
export * from "./rules.ts";
export * from "./validate_experiment.ts";
export * from "./json_schema.ts";
export { writeSchemaFile } from "./schema_gen.ts";
export * from "./canonical_json.ts";
export * from "./plan/phase_graph.ts";
export * from "./plan/resolve_plan.ts";
export * from "./plan/device_demand.ts";
