import { deepEqual, equal, match, ok } from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { join } from "node:path";
import { acquireRunLock, LockHeldError } from "../pipeline/store/lock.ts";
import { StoredRunError } from "../reproduce/mod.ts";
import { EXIT_CODES } from "../types/exit_codes.ts";
import { main } from "./main.ts";
import { createProgram } from "./program.ts";

const QUICKSTART = new URL("../../experiments/quickstart.yaml", import.meta.url).pathname;

Deno.test("every <name>_command.ts in src/cli is registered as parity <name>", async () => {
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL(".", import.meta.url))) {
    const m = entry.name.match(/^(\w+)_command\.ts$/);
    if (m) files.push(m[1].replaceAll("_", "-"));
  }
  const names = createProgram(() => {}).commands.map((c) => c.name());
  deepEqual([...names].sort(), files.sort());
});

Deno.test("parity <command> --help prints that command's usage and exits 0", async () => {
  for (const name of createProgram(() => {}).commands.map((c) => c.name())) {
    const help = await captureConsole(() => main([name, "--help"]));
    equal(help.value, 0, name);
    match(help.out, new RegExp(`^Usage: parity ${name} `), name);
    // An example in every --help, each a runnable `parity <name> ...` line.
    match(help.out, new RegExp(`\\nExamples?:\\n  parity ${name}( |$)`, "m"), name);
    equal(help.err, "", name);
  }
  const top = await captureConsole(() => main(["--help"]));
  equal(top.value, 0);
  match(top.out, /^Usage: parity <command> \[options\]/);
  match(top.out, /Exit codes: 0 PASS, 1 FAIL, 2 bad input or usage, 3 ERROR, 4 ABSTAIN/);
  equal((await captureConsole(() => main(["help", "gc"]))).value, 0);
  match(top.out, /\nExamples:\n {2}parity run experiments\/quickstart\.yaml\n/);
});

Deno.test("parity --version prints the harness version, deno.json's, on stdout", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  for (const flag of ["--version", "-V"]) {
    const run = await captureConsole(() => main([flag]));
    equal(run.value, 0);
    equal(run.out, `parity ${config.version}`);
    equal(run.err, "");
  }
  equal(config.name, "@parity/harness");
});

Deno.test("parity exits 2 with a one-line message and no stack on usage errors", async () => {
  const none = await captureConsole(() => main([]));
  equal(none.value, 2);
  match(none.err, /^Usage: parity <command>/);
  const unknown = await captureConsole(() => main(["nope"]));
  equal(unknown.value, 2);
  equal(unknown.err, "parity: unknown command 'nope'\n(run 'parity --help' for usage)");
  const missing = await captureConsole(() => main(["run"]));
  equal(missing.value, 2);
  equal(
    missing.err,
    "parity run: missing required argument 'file'\n(run 'parity run --help' for usage)",
  );
  const excess = await captureConsole(() => main(["gc", "results", "extra"]));
  equal(excess.value, 2);
  ok(!excess.all.includes("    at "), "no stack trace");
});

Deno.test("parity run: a bare --force never swallows the next file or flag", async () => {
  // The file after a bare --force stays a file: it is read (and reported missing), not taken as
  // a phase name.
  const file = await captureConsole(() => main(["run", "--force", "absent.yaml"]));
  equal(file.value, 2);
  match(file.err, /^absent\.yaml: /);
  // `--force --force nope`: the first is "every phase", the second names an unknown phase.
  const named = await captureConsole(() =>
    main(["run", QUICKSTART, "--force", "--force", "nope", "--results", "/nonexistent"])
  );
  equal(named.value, 2);
  match(named.err, /^parity run: --force nope: no such phase in quickstart .*its phases: baseline/);
});

Deno.test("parity exits 2, not an internal error, when an experiment uses an unset ${env.X}", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/x.yaml`;
    await Deno.writeTextFile(
      file,
      'name: envx\nschedule: {steps: 4, save_at: 2}\ntrainer: {command: [echo, "${env.PARITY_UNSET_FOR_TEST_X}"]}\n',
    );
    const run = await captureConsole(() => main(["plan", file]));
    equal(run.value, 2);
    ok(run.err.includes("unknown placeholder ${env.PARITY_UNSET_FOR_TEST_X}"), run.err);
    ok(!run.err.includes("internal error"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parity run and report refuse an --image-base-url that cannot be linked, launching nothing", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_cli_" });
  try {
    const results = `${tmp}/results`;
    for (
      const url of [
        "charts/",
        "file:///tmp/x",
        "https://u:secret@example.org/",
        "https://e.org/?s=1",
      ]
    ) {
      const run = await captureConsole(() =>
        main(["run", "experiments/quickstart.yaml", "--results", results, "--image-base-url", url])
      );
      equal(run.value, 2, url);
      match(run.err, /--image-base-url: /);
      ok(!run.all.includes("secret"), "the credential is not echoed");
    }
    let created = true;
    await Deno.stat(results).catch(() => (created = false));
    equal(created, false, "nothing was launched or written");
    const report = await captureConsole(() =>
      main(["report", tmp, "--image-base-url", "ftp://example.org/"])
    );
    equal(report.value, 2);
    match(report.err, /use https/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("main() ends with the exit code of the HarnessError a subcommand throws", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_cli_" });
  try {
    // LockHeldError (ERROR, 3): another run holds the experiment folder; nothing is launched.
    const results = join(tmp, "results");
    await using lock = await acquireRunLock(join(results, "quickstart"));
    equal(new LockHeldError(results, lock.holder).exitCode, EXIT_CODES.ERROR);
    const held = await captureConsole(() =>
      main(["run", QUICKSTART, "--results", results, "--quiet"])
    );
    equal(held.value, EXIT_CODES.ERROR);
    match(held.err, /^parity run: ERROR: another run holds .*quickstart \(PID \d+/);
    // StoredRunError (a UsageError, 2): told in one line, then the pointer to the command's help.
    equal(new StoredRunError("x").exitCode, EXIT_CODES.USAGE);
    const notRun = await captureConsole(() => main(["rerun", tmp]));
    equal(notRun.value, EXIT_CODES.USAGE);
    match(notRun.err, /^parity rerun: \S+experiment\.resolved\.yaml: missing .*\n/);
    match(notRun.err, /\n\(run 'parity rerun --help' for usage\)$/);
    ok(!notRun.all.includes("    at "), "no stack trace");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
