import { equal } from "node:assert/strict";
import { closestMatch, didYouMean, editDistance } from "./_did_you_mean.ts";

Deno.test("editDistance() counts insertions, deletions, substitutions and transpositions", () => {
  equal(editDistance("steps", "steps"), 0);
  equal(editDistance("step", "steps"), 1);
  equal(editDistance("stepz", "steps"), 1);
  equal(editDistance("wolrd_size", "world_size"), 1);
  equal(editDistance("", "abc"), 3);
  equal(editDistance("kitten", "sitting"), 3);
});

Deno.test("closestMatch() suggests near typos only", () => {
  const keys = ["world_size", "ep_size", "zero_stage", "precision"];
  equal(closestMatch("wolrd_size", keys), "world_size");
  equal(closestMatch("zero_stag", keys), "zero_stage");
  equal(closestMatch("Precision", keys), "precision");
  equal(closestMatch("micro_batch", keys), undefined);
  equal(closestMatch("x", keys), undefined);
  equal(closestMatch("anything", []), undefined);
});

Deno.test("didYouMean() formats a hint or nothing", () => {
  equal(didYouMean("stepz", ["steps", "seed"], (s) => `\${${s}}`), " (did you mean ${steps}?)");
  equal(didYouMean("zzzzzz", ["steps"]), "");
});
