import { deepEqual, equal, ok } from "node:assert/strict";
import { EXIT_CODES } from "./exit_codes.ts";
import { HarnessError, UsageError } from "./harness_error.ts";

Deno.test("EXIT_CODES is README's table: 0 PASS, 1 FAIL, 2 usage, 3 ERROR, 4 ABSTAIN", () => {
  deepEqual(EXIT_CODES, { PASS: 0, FAIL: 1, USAGE: 2, ERROR: 3, ABSTAIN: 4 });
});

Deno.test("a HarnessError carries its exit code, its class name and its cause", () => {
  class DiskGone extends HarnessError {
    constructor(cause: Error) {
      super("the disk is gone", EXIT_CODES.ERROR, { cause });
    }
  }
  const cause = new Error("EIO");
  const error = new DiskGone(cause);
  ok(error instanceof HarnessError && error instanceof Error);
  equal(error.exitCode, 3);
  equal(error.name, "DiskGone");
  equal(error.message, "the disk is gone");
  equal(error.cause, cause);
  const usage = new UsageError("--set x: expected KEY.PATH=VALUE");
  ok(usage instanceof HarnessError);
  equal(usage.exitCode, EXIT_CODES.USAGE);
  equal(usage.name, "UsageError");
});
