import assert from "node:assert/strict";
import { causeLines } from "./_child_tail.ts";

// The shape torchrun 2.13 ends a failed launch with (pids and paths shortened).
const TORCHRUN_TAIL = `step 3 loss 2.41
terminate called after throwing an instance of 'gloo::IoException'
  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection reset by peer
W1202 12:47:18.123000 1 torch/distributed/elastic/multiprocessing/api.py:908] Sending process 17248 closing signal SIGTERM
E1202 12:47:18.456000 1 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -6) local_rank: 1 (pid: 17249) of binary: python
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 901, in main
    run(args)
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train_moe.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-02_12:47:18
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 17249)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 17249
============================================================`;

Deno.test("causeLines: torchrun's report becomes one line; the rank's message is the headline", () => {
  const { lines, headline } = causeLines(TORCHRUN_TAIL);
  assert.equal(lines.at(-1), "launcher: rank 1 ended with exit code -6 (SIGABRT)");
  assert.ok(lines.some((l) => l.includes("terminate called")), lines.join("\n"));
  assert.ok(!lines.some((l) => l.includes("error_file")), "the report's fields are folded");
  assert.match(headline ?? "", /^what\(\): .*Connection reset by peer$/);
});

Deno.test("causeLines: a torchrun report alone names the rank and how it ended", () => {
  const reportOnly = TORCHRUN_TAIL.split("\n").slice(12).join("\n");
  const { lines, headline } = causeLines(reportOnly);
  assert.deepEqual(lines, ["launcher: rank 1 ended with exit code -6 (SIGABRT)"]);
  assert.equal(headline, "launcher: rank 1 ended with exit code -6 (SIGABRT)");
});

Deno.test("causeLines: a plain child's tail keeps its last lines and last error line", () => {
  const tail = Array.from({ length: 12 }, (_, i) => `line ${i}`).join("\n") +
    "\nRuntimeError: boom\nexiting\n";
  const { lines, headline } = causeLines(tail);
  assert.equal(lines.length, 8);
  assert.equal(lines.at(-1), "exiting");
  assert.equal(headline, "RuntimeError: boom");
  assert.deepEqual(causeLines(""), { lines: [], headline: null });
});
