import { deepEqual, equal, ok } from "node:assert/strict";
import {
  findProcesses,
  type ProcessEntry,
  uniqueMarker,
  waitForNoProcesses,
} from "./proc_table.ts";

Deno.test("findProcesses() lists a live process by a marker in its argv, then not after it exits", async () => {
  const marker = uniqueMarker("proc-table");
  const child = new Deno.Command("bash", {
    args: ["-c", 'exec -a "$0" sleep 30', `${marker}-sleeper`],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    // Until bash has exec'd: before that the marker is already in bash's own argv.
    const execed = (list: ProcessEntry[]) =>
      list.length > 0 && list[0].argv[0] === `${marker}-sleeper`;
    let found = await findProcesses(marker);
    for (let i = 0; i < 100 && !execed(found); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      found = await findProcesses(marker);
    }
    equal(found.length, 1);
    equal(found[0].pid, child.pid);
    deepEqual(found[0].argv, [`${marker}-sleeper`, "30"]);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  deepEqual(await waitForNoProcesses(marker, 1000), []);
});

Deno.test("findProcesses() never lists the calling process and rejects an empty marker", async () => {
  const marker = uniqueMarker();
  ok(marker.startsWith(`parity-test-${Deno.pid}-`));
  deepEqual(await findProcesses(marker), []);
  let error: unknown;
  try {
    await findProcesses("");
  } catch (e) {
    error = e;
  }
  ok(error instanceof TypeError);
});
