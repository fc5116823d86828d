import { deepEqual, equal, throws } from "node:assert/strict";
import {
  checkTemplate,
  interpolate,
  interpolateArg,
  PlaceholderError,
  PLACEHOLDERS,
  placeholdersIn,
} from "./placeholders.ts";

Deno.test("interpolate() substitutes every placeholder", () => {
  equal(
    interpolate("--steps=${steps} --out ${run_dir}/m.jsonl ${steps}", {
      steps: "40",
      run_dir: "/r",
    }),
    "--steps=40 --out /r/m.jsonl 40",
  );
  equal(interpolate("${args.world_size}", { "args.world_size": "4" }), "4");
  equal(interpolate("plain", {}), "plain");
  equal(interpolate("", {}), "");
});

Deno.test("interpolate() keeps $${ as a literal ${ and lone dollars as they are", () => {
  equal(interpolate("$${HOME} and ${x}", { x: "1" }), "${HOME} and 1");
  equal(interpolate("cost $5 $$ ${x}$", { x: "y" }), "cost $5 $$ y$");
  // Scanned left to right: "$" then the escape "$${".
  equal(interpolate("$$${x}", { x: "v" }), "$${x}");
});

Deno.test("interpolate() throws on unknown and malformed placeholders", () => {
  throws(
    () => interpolate("${stepz}", { steps: "1", seed: "2" }),
    (e: Error) =>
      e instanceof PlaceholderError &&
      e.message === "unknown placeholder ${stepz} (did you mean ${steps}?)",
  );
  throws(() => interpolate("${steps", { steps: "1" }), /unterminated placeholder \$\{steps/);
  throws(() => interpolate("a ${} b", {}), /empty placeholder/);
});

Deno.test("placeholdersIn() lists names once, in order, ignoring escapes", () => {
  deepEqual(placeholdersIn("${b} ${a} ${b} $${c} ${env.HOME}"), ["b", "a", "env.HOME"]);
  deepEqual(placeholdersIn("no placeholders"), []);
  throws(() => placeholdersIn("${a"), PlaceholderError);
});

Deno.test("checkTemplate() knows each program's scope, args keys and env names", () => {
  const trainer = { names: PLACEHOLDERS.trainer, argKeys: ["world_size"] };
  equal(checkTemplate("${steps} ${args.world_size} ${env.CUDA_HOME}", trainer), undefined);
  equal(
    checkTemplate("${stepz}", trainer),
    "unknown placeholder ${stepz} (did you mean ${steps}?)",
  );
  equal(
    checkTemplate("${args.ep_size}", trainer),
    "unknown placeholder ${args.ep_size}: no argument ep_size in the merged args",
  );
  equal(checkTemplate("${env.1BAD}", trainer), "invalid environment variable name in ${env.1BAD}");
  equal(
    checkTemplate("${native}", trainer),
    "unknown placeholder ${native} here (only the converter has it)",
  );
  equal(
    checkTemplate("${native} ${universal}", { names: PLACEHOLDERS.converter, argKeys: [] }),
    undefined,
  );
  equal(
    checkTemplate("${source_checkpoint} ${target} ${policy} ${plan_out}", {
      names: PLACEHOLDERS.planner,
      argKeys: [],
    }),
    undefined,
  );
  equal(checkTemplate("${x", trainer), "unterminated placeholder ${x (write $${ for a literal ${)");
});

Deno.test("interpolateArg() drops an argv element whose optional placeholder is unset or empty", () => {
  deepEqual(interpolateArg("--noise=${args.noise?}", {}), []);
  deepEqual(interpolateArg("--noise=${args.noise?}", { "args.noise": "" }), []);
  deepEqual(interpolateArg("--noise=${args.noise?}", { "args.noise": "0.1" }), ["--noise=0.1"]);
  deepEqual(interpolateArg("${args.noise}", { "args.noise": "" }), [""], "plain stays an element");
  equal(interpolate("a${args.x?}b", {}), "ab");
  throws(() => interpolateArg("${args.x}", {}), /unknown placeholder/);
});

Deno.test("checkTemplate() accepts an optional placeholder for an argument only some resumes set", () => {
  const scope = { names: ["steps"], argKeys: ["world_size"], optionalArgKeys: ["noise"] };
  equal(checkTemplate("--noise=${args.noise?}", scope), undefined);
  equal(checkTemplate("--noise=${args.noise}", scope)?.includes("no argument noise"), true);
  equal(checkTemplate("${args.nosie?}", scope)?.includes("unknown placeholder"), true);
});

Deno.test("checkTemplate() accepts ${args.x?} that no phase sets, but not a misspelling", () => {
  const scope = { names: PLACEHOLDERS.trainer, argKeys: ["world_size"], optionalArgKeys: [] };
  // Nothing defines hf_extra: optional, so empty everywhere (issue 34).
  equal(checkTemplate("${args.hf_extra?}", scope), undefined);
  // Without `?` it is still an error.
  equal(
    checkTemplate("${args.hf_extra}", scope),
    "unknown placeholder ${args.hf_extra}: no argument hf_extra in the merged args",
  );
  // A likely typo of a key that exists is an error even with `?`.
  equal(
    checkTemplate("${args.world_sise?}", scope),
    "unknown placeholder ${args.world_sise}: no argument world_sise in the merged args" +
      " (did you mean ${args.world_size}?)",
  );
  // A fixed name with `?` can never be defined: still an error.
  equal(checkTemplate("${stepz?}", scope), "unknown placeholder ${stepz} (did you mean ${steps}?)");
  deepEqual(interpolateArg("${args.hf_extra?}", { "args.world_size": "2" }), []);
});

Deno.test("checkTemplate(): ${output_dir} is the trainer's only", () => {
  equal(
    checkTemplate("--output_dir=${output_dir}", { names: PLACEHOLDERS.trainer, argKeys: [] }),
    undefined,
  );
  equal(
    checkTemplate("${output_dir}", { names: PLACEHOLDERS.converter, argKeys: [] }),
    "unknown placeholder ${output_dir} here (only the trainer has it)",
  );
});
