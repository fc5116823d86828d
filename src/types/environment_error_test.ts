import assert from "node:assert/strict";
import { describeEnvironmentError, EnvironmentError } from "./environment_error.ts";

Deno.test("describeEnvironmentError: filesystem errors become one sentence", () => {
  const full = Object.assign(
    new Error("No space left on device (os error 28): write 'r/summary.json'"),
    { code: "ENOSPC" },
  );
  assert.equal(
    describeEnvironmentError(full),
    "No space left on device: write 'r/summary.json'",
  );
  const long = Object.assign(new Error("File name too long (os error 36): mkdir 'r/aaa'"), {
    code: "ENAMETOOLONG",
  });
  assert.equal(describeEnvironmentError(long), "File name too long: mkdir 'r/aaa'");
  const readOnly = Object.assign(new Error("Read-only file system (os error 30): open 'r/x'"), {
    code: "EROFS",
  });
  assert.match(describeEnvironmentError(readOnly)!, /read-only.*open 'r\/x'/i);
  const denied = new Deno.errors.PermissionDenied("Permission denied (os error 13): open 'x'");
  assert.equal(describeEnvironmentError(denied), "Permission denied: open 'x'");
  assert.equal(describeEnvironmentError(new EnvironmentError("disk gone")), "disk gone");
});

Deno.test("describeEnvironmentError: bugs are not environment errors", () => {
  assert.equal(describeEnvironmentError(new TypeError("x is undefined")), null);
  assert.equal(describeEnvironmentError("text"), null);
});
