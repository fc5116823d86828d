import assert from "node:assert/strict";
import { unrequestedTags } from "./checkpoint_tags.ts";

Deno.test("unrequestedTags() warns of tags of the template the experiment did not ask for", () => {
  const requested = [{ step: 6, name: "global_step6" }];
  const [warning, ...more] = unrequestedTags(
    "split",
    ["global_step3", "global_step6", "global_step6_universal", "runs", "global_step16"],
    requested,
  );
  assert.equal(more.length, 0);
  assert.equal(warning.level, "warning");
  assert.equal(warning.code, "checkpoint-tags-not-requested");
  assert.equal(warning.count, 2);
  assert.match(warning.message, /holds global_step16, global_step3, which the experiment did not/);
  // Every requested tag, and folders of another pattern, are no finding.
  assert.deepEqual(
    unrequestedTags("split", ["checkpoint-3", "checkpoint-6", "runs", "global_step9"], [
      { step: 3, name: "checkpoint-3" },
      { step: 6, name: "checkpoint-6" },
    ]),
    [],
  );
});
