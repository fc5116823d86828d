import { deepEqual, ok } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { readExperimentFile } from "./validate_experiment.ts";

const FOLDER = fileURLToPath(new URL("../../test/fixtures/bad_experiments/", import.meta.url));

/** Every malformed fixture: the exact path of the expected problem and words of its message. */
const EXPECTED: Record<string, { path: string; message: string }> = {
  "bad_fault.yaml": {
    path: "trainer.args.fault",
    message: 'unknown fault "skip-rng-restor" (did you mean skip-rng-restore?)',
  },
  "bad_metrics_regex.yaml": {
    path: "trainer.metrics.pattern",
    message: "invalid regular expression",
  },
  "bad_placeholder.yaml": {
    path: "trainer.command[3]",
    message: "unknown placeholder ${stepz} (did you mean ${steps}?)",
  },
  "bad_resume_name.yaml": {
    path: "resume.Native Resume",
    message: "invalid key: expected lowercase letters",
  },
  "compare_unknown_phase.yaml": {
    path: "compare[0].b",
    message: 'unknown phase "resume-nativ" (did you mean resume-native?)',
  },
  "converter_placeholder_scope.yaml": {
    path: "converter.command[5]",
    message: "${plan_out} here (only the planner has it)",
  },
  "duplicate_resume_names.yaml": {
    path: "resume.native",
    message: "duplicate key (line 6, column 3",
  },
  "empty.yaml": { path: "", message: "the file is empty" },
  "sensitivity_duplicate_error.yaml": {
    path: "resume.native.sensitivity.lr_error",
    message: "expected distinct LR errors",
  },
  "empty_program.yaml": {
    path: "trainer.command[0]",
    message: "expected the program to run, got an empty string",
  },
  "experiment_name_too_long.yaml": { path: "name", message: "expected at most 120 characters" },
  "resume_name_too_long.yaml": {
    path: `resume.${"r".repeat(300)}`,
    message: "invalid key: expected at most 64 characters",
  },
  "compare_name_too_long.yaml": {
    path: "compare[0].name",
    message: "expected at most 100 characters",
  },
  "matrix_name_too_long.yaml": {
    path: "name",
    message: "is 284 bytes with its matrix suffix; at most 200 fit in a results folder name",
  },
  "empty_code_input.yaml": {
    path: "trainer.code_inputs[1]",
    message: "expected a non-empty string",
  },
  "env_value_number.yaml": { path: "trainer.env.OMP_NUM_THREADS", message: "expected a string" },
  "ep_size_not_dividing.yaml": {
    path: "resume.reshard.args.world_size",
    message: "ep_size 2 (inherited from trainer.args) does not divide world_size 3",
  },
  "hf_without_script.yaml": { path: "trainer.args.script", message: "required by the hf preset" },
  "json_duplicate_key.json": { path: "schedule.steps", message: "duplicate key (line 3" },
  "json_syntax_error.json": { path: "", message: "JSON syntax error at line 4, column 3" },
  "log_without_pattern.yaml": {
    path: "trainer.metrics.pattern",
    message: "required when format is log",
  },
  "matrix_bad_value.yaml": {
    path: "matrix.trainer.args.zero_stage[2]",
    message: "expected 0, 1, 2 or 3, got 4",
  },
  "matrix_empty_list.yaml": {
    path: "matrix.trainer.args.zero_stage",
    message: "expected at least one value",
  },
  "matrix_unknown_path.yaml": {
    path: "matrix.trainer.argz.zero_stage",
    message: "unknown path: no field argz in trainer (did you mean args?)",
  },
  "metrics_pattern_missing_group.yaml": {
    path: "trainer.metrics.pattern",
    message: "missing named group (?<loss>...)",
  },
  "missing_trainer.yaml": { path: "trainer", message: "required" },
  "negative_steps.yaml": { path: "schedule.steps", message: "expected a positive integer, got -5" },
  "neither_preset_nor_command.yaml": { path: "trainer", message: "missing preset or command" },
  "not_yaml.yaml": { path: "", message: "YAML syntax error at line 2, column" },
  "placement_missing_fields.yaml": {
    path: "resume.reshard.args.placement.ranks",
    message: "required",
  },
  "placement_uncovered_expert.yaml": {
    path: "trainer.args.placement.ranks",
    message: "no rank holds expert 3",
  },
  "plan_sync_without_planner.yaml": { path: "planner", message: "plan_sync needs a planner" },
  "preset_and_command.yaml": { path: "trainer", message: "either preset or command, not both" },
  "resume_env_placeholder.yaml": {
    path: "resume.native.env.RESUME_EP",
    message: "no argument ep_size in the merged args",
  },
  "retry_attempts_too_many.yaml": {
    path: "trainer.retry.attempts",
    message: "expected at most 10, got 50",
  },
  "retry_bad_regex.yaml": {
    path: "trainer.retry.on[0]",
    message: "invalid regular expression: Unterminated group",
  },
  "from_step_not_a_save.yaml": {
    path: "resume.early.from_step",
    message: "expected one of schedule.save_at (3, 6), got 4",
  },
  "save_at_not_below_steps.yaml": {
    path: "schedule.save_at",
    message: "expected less than schedule.steps (40), got 40",
  },
  "tab_indent.yaml": { path: "", message: "Tabs are not allowed as indentation" },
  "top_level_list.yaml": { path: "", message: "expected a mapping at the top level" },
  "top_level_scalar.yaml": { path: "", message: 'got string "just a sentence"' },
  "universal_without_converter.yaml": {
    path: "converter",
    message: "resume.universal resumes from a universal checkpoint",
  },
  "unknown_key.yaml": {
    path: "trainer.wolrd_size",
    message: "unknown key (did you mean args.world_size?)",
  },
  "unknown_policy.yaml": {
    path: "plan_sync.policies[1]",
    message: 'unknown policy "least_loaded_local"',
  },
  "unknown_reference_arg.yaml": {
    path: "trainer.args.micro_batch",
    message: "unknown reference-preset argument",
  },
  "unknown_top_level_key.yaml": {
    path: "schedul",
    message: "unknown key (did you mean schedule?)",
  },
  "window_beyond_steps.yaml": {
    path: "compare[0].window.to",
    message: "expected at most schedule.steps (40), got 60",
  },
  "wrong_enum.yaml": {
    path: "trainer.args.precision",
    message: 'expected one of fp32, bf16, got "fp16"',
  },
  "wrong_type_steps.yaml": {
    path: "schedule.steps",
    message: 'expected a positive integer, got "forty"',
  },
  "zero_stage_four.json": {
    path: "trainer.args.zero_stage",
    message: "expected 0, 1, 2 or 3, got 4",
  },
};

Deno.test("bad experiment fixtures: every file is listed, and there are at least 24", async () => {
  const files: string[] = [];
  for await (const entry of Deno.readDir(FOLDER)) if (entry.isFile) files.push(entry.name);
  deepEqual(files.sort(), Object.keys(EXPECTED).sort());
  ok(files.length >= 24, `${files.length} fixtures`);
});

for (const [file, expected] of Object.entries(EXPECTED)) {
  Deno.test(`validateExperiment() rejects ${file} at ${expected.path || "the file level"}`, async () => {
    const result = await readExperimentFile(`${FOLDER}${file}`);
    ok(!result.ok, `${file} was accepted`);
    const hit = result.errors.find((error) =>
      error.path === expected.path && error.message.includes(expected.message)
    );
    ok(
      hit,
      `${file}: no error at ${JSON.stringify(expected.path)} containing ${
        JSON.stringify(expected.message)
      }; got:\n${result.errors.map((e) => `${e.path}: ${e.message}`).join("\n")}`,
    );
  });
}
