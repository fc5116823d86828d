import { deepEqual, equal, match, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import {
  acquireRunLock,
  inspectRunLock,
  LOCK_FILE_NAME,
  LockHeldError,
  type LockHolder,
} from "./lock.ts";

const HOLDER_SCRIPT = new URL("../../../test/programs/hold_lock.ts", import.meta.url).pathname;

interface LockEvent {
  event: string;
  pid: number;
  t: number;
  holder?: number;
  message?: string;
  reason?: string;
  removed?: boolean;
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lock_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A holder process running test/programs/hold_lock.ts, with its events as they arrive. */
function spawnHolder(dir: string, holdMs: number, mode: "wait" | "nowait") {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", HOLDER_SCRIPT, dir, String(holdMs), mode],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const events: LockEvent[] = [];
  const waiters: Array<() => void> = [];
  const reading = (async () => {
    let buffered = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        events.push(JSON.parse(buffered.slice(0, nl)));
        buffered = buffered.slice(nl + 1);
        waiters.splice(0).forEach((w) => w());
      }
    }
    waiters.splice(0).forEach((w) => w());
  })();
  const stderr = new Response(child.stderr).text();
  return {
    pid: child.pid,
    events,
    /** Resolves once an event named `name` has arrived (fails if the process ends first). */
    async until(name: string): Promise<LockEvent> {
      for (;;) {
        const found = events.find((e) => e.event === name);
        if (found) return found;
        const more = new Promise<void>((r) => waiters.push(r));
        const ended = await Promise.race([more.then(() => false), reading.then(() => true)]);
        if (ended && !events.some((e) => e.event === name)) {
          throw new Error(`holder ${child.pid} ended without "${name}": ${await stderr}`);
        }
      }
    },
    async done(): Promise<{ code: number; stderr: string }> {
      const status = await child.status;
      await reading;
      return { code: status.code, stderr: await stderr };
    },
  };
}

/** PID of a process that has already exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("true").spawn();
  await child.status;
  return child.pid;
}

Deno.test("acquireRunLock() in a second real process fails with the holder's PID, start time and --wait", async () => {
  await withTempDir(async (dir) => {
    const first = spawnHolder(dir, 1500, "nowait");
    await first.until("acquired");
    const lockFile = JSON.parse(await Deno.readTextFile(join(dir, LOCK_FILE_NAME))) as LockHolder;
    equal(lockFile.pid, first.pid);
    const second = spawnHolder(dir, 0, "nowait");
    const held = await second.until("held");
    equal(held.holder, first.pid);
    match(held.message!, new RegExp(`^another run holds .+ \\(PID ${first.pid}, started `));
    ok(held.message!.includes(lockFile.started_at.replace(/\.\d+Z$/, "Z")), held.message);
    match(held.message!, /wait for it or pass --wait$/);
    equal((await second.done()).code, 3);
    const end = await first.done();
    equal(end.code, 0, end.stderr);
    deepEqual(first.events.find((e) => e.event === "released")?.removed, true);
    await rejects(Deno.stat(join(dir, LOCK_FILE_NAME)), Deno.errors.NotFound);
  });
});

Deno.test("acquireRunLock() with wait in a real process waits for the holder, reporting it once", async () => {
  await withTempDir(async (dir) => {
    const first = spawnHolder(dir, 800, "nowait");
    await first.until("acquired");
    const second = spawnHolder(dir, 0, "wait");
    const waiting = await second.until("waiting");
    equal(waiting.holder, first.pid);
    const acquired = await second.until("acquired");
    const released = await first.until("releasing");
    ok(acquired.t >= released.t, `waiter got the lock at ${acquired.t}, before ${released.t}`);
    equal(second.events.filter((e) => e.event === "waiting").length, 1);
    equal((await second.done()).code, 0);
    equal((await first.done()).code, 0);
  });
});

Deno.test("acquireRunLock() lets exactly one of several processes started at once win", async () => {
  await withTempDir(async (dir) => {
    const holders = Array.from({ length: 4 }, () => spawnHolder(dir, 1000, "nowait"));
    const codes = (await Promise.all(holders.map((h) => h.done()))).map((d) => d.code);
    equal(codes.filter((c) => c === 0).length, 1, `exit codes ${codes}`);
    equal(codes.filter((c) => c === 3).length, 3, `exit codes ${codes}`);
    const winner = holders[codes.indexOf(0)];
    for (const h of holders) {
      if (h === winner) continue;
      equal(h.events.find((e) => e.event === "held")?.holder, winner.pid);
    }
  });
});

Deno.test("acquireRunLock() with wait serializes concurrent processes: hold periods never overlap", async () => {
  await withTempDir(async (dir) => {
    const holders = Array.from({ length: 3 }, () => spawnHolder(dir, 250, "wait"));
    for (const h of holders) equal((await h.done()).code, 0);
    const periods = holders
      .map((
        h,
      ) => [
        h.events.find((e) => e.event === "acquired")!.t,
        h.events.find((e) => e.event === "releasing")!.t,
      ])
      .sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < periods.length; i++) {
      ok(periods[i][0] >= periods[i - 1][1], `overlapping holds: ${JSON.stringify(periods)}`);
    }
  });
});

Deno.test("acquireRunLock() takes over a lock whose process has exited, and says so", async () => {
  await withTempDir(async (dir) => {
    const pid = await deadPid();
    const stale: LockHolder = {
      pid,
      started_at: "2026-11-29T10:15:00.000Z",
      hostname: Deno.hostname(),
      argv: ["deno", "run", "src/cli/main.ts"],
      proc_start: 1,
      token: "stale",
    };
    await Deno.writeTextFile(join(dir, LOCK_FILE_NAME), JSON.stringify(stale));
    equal((await inspectRunLock(dir))?.alive, false);
    const tookOver: Array<[LockHolder, string]> = [];
    const lock = await acquireRunLock(dir, { onTakeover: (h, why) => tookOver.push([h, why]) });
    equal(tookOver.length, 1);
    equal(tookOver[0][0].pid, pid);
    equal(tookOver[0][1], `process ${pid} no longer exists`);
    const now = JSON.parse(await Deno.readTextFile(lock.path)) as LockHolder;
    equal(now.pid, Deno.pid);
    equal(now.token, lock.holder.token);
    equal(await lock.release(), true);
  });
});

Deno.test("acquireRunLock() takes over from a real holder killed with SIGKILL", async () => {
  await withTempDir(async (dir) => {
    const holder = spawnHolder(dir, 60_000, "nowait");
    await holder.until("acquired");
    Deno.kill(holder.pid, "SIGKILL");
    await holder.done();
    const reasons: string[] = [];
    const lock = await acquireRunLock(dir, {
      onTakeover: (h, why) => reasons.push(`${h.pid}: ${why}`),
    });
    deepEqual(reasons, [`${holder.pid}: process ${holder.pid} no longer exists`]);
    equal(await lock.release(), true);
  });
});

Deno.test("acquireRunLock() takes over a lock whose PID now belongs to another process", async () => {
  await withTempDir(async (dir) => {
    // Our own PID is alive, but with a start time that is not ours: a reused PID.
    const lockFile: LockHolder = {
      pid: Deno.pid,
      started_at: new Date().toISOString(),
      hostname: Deno.hostname(),
      argv: ["deno"],
      proc_start: 7,
    };
    await Deno.writeTextFile(join(dir, LOCK_FILE_NAME), JSON.stringify(lockFile));
    const reasons: string[] = [];
    const lock = await acquireRunLock(dir, { onTakeover: (_h, why) => reasons.push(why) });
    deepEqual(reasons, [`PID ${Deno.pid} now belongs to another process`]);
    await lock.release();
  });
});

Deno.test("acquireRunLock() judges a lock without a start time by when the process started", async () => {
  await withTempDir(async (dir) => {
    // This process started long after 2001, so it cannot be the one that locked then.
    const old: LockHolder = {
      pid: Deno.pid,
      started_at: "2001-01-01T00:00:00Z",
      hostname: Deno.hostname(),
      argv: [],
    };
    await Deno.writeTextFile(join(dir, LOCK_FILE_NAME), JSON.stringify(old));
    const reasons: string[] = [];
    const lock = await acquireRunLock(dir, { onTakeover: (_h, why) => reasons.push(why) });
    deepEqual(reasons, [`PID ${Deno.pid} now belongs to a process started after the lock`]);
    await lock.release();
  });
});

Deno.test("acquireRunLock() treats a second acquisition by a live holder as held, then times out waiting", async () => {
  await withTempDir(async (dir) => {
    const lock = await acquireRunLock(dir);
    const err = await acquireRunLock(dir).catch((e) => e);
    ok(err instanceof LockHeldError);
    equal(err.holder.pid, Deno.pid);
    const waits: number[] = [];
    const started = performance.now();
    const timedOut = await acquireRunLock(dir, {
      wait: true,
      pollMs: 20,
      timeoutMs: 150,
      onWait: (h) => waits.push(h.pid),
    }).catch((e) => e);
    ok(timedOut instanceof LockHeldError);
    match(timedOut.message, /still holds .* after waiting \d+ s$/);
    ok(performance.now() - started >= 150);
    deepEqual(waits, [Deno.pid]);
    const controller = new AbortController();
    const aborted = acquireRunLock(dir, { wait: true, pollMs: 20, signal: controller.signal });
    setTimeout(() => controller.abort(new Error("SIGINT")), 50);
    await rejects(aborted, /SIGINT/);
    equal(await lock.release(), true);
  });
});

Deno.test("acquireRunLock() with wait gets the lock as soon as an in-process holder releases", async () => {
  await withTempDir(async (dir) => {
    const lock = await acquireRunLock(dir);
    const waiting = acquireRunLock(dir, { wait: true, pollMs: 20 });
    setTimeout(() => lock.release(), 100);
    const second = await waiting;
    ok(second.holder.token !== lock.holder.token);
    equal(await second.release(), true);
  });
});

Deno.test("RunLock.release() removes only its own lock", async () => {
  await withTempDir(async (dir) => {
    const lock = await acquireRunLock(dir);
    // Someone else took the lock over (e.g. after judging us stale): their file must survive.
    const theirs = { ...lock.holder, token: "someone-else" };
    await Deno.writeTextFile(lock.path, JSON.stringify(theirs));
    equal(await lock.release(), false);
    equal(JSON.parse(await Deno.readTextFile(lock.path)).token, "someone-else");
    await Deno.remove(lock.path);
    const again = await acquireRunLock(dir);
    equal(await again.release(), true);
    equal(await again.release(), false, "a second release is a no-op");
    equal(await inspectRunLock(dir), undefined);
  });
});

Deno.test("acquireRunLock() among many in-process acquirers at once lets exactly one win", async () => {
  await withTempDir(async (dir) => {
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => acquireRunLock(dir)));
    const won = results.filter((r) => r.status === "fulfilled");
    equal(won.length, 1);
    ok(results.every((r) => r.status === "fulfilled" || r.reason instanceof LockHeldError));
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireRunLock>>>).value
      .release();
  });
});

Deno.test("acquireRunLock() writes pid, start time, hostname and argv into the lock file", async () => {
  await withTempDir(async (dir) => {
    const experimentDir = join(dir, "results", "quickstart");
    await using lock = await acquireRunLock(experimentDir);
    const onDisk = JSON.parse(await Deno.readTextFile(join(experimentDir, ".lock")));
    equal(onDisk.pid, Deno.pid);
    equal(onDisk.hostname, Deno.hostname());
    ok(Math.abs(Date.parse(onDisk.started_at) - Date.now()) < 60_000);
    ok(Array.isArray(onDisk.argv) && onDisk.argv.length > 0);
    deepEqual(onDisk, lock.holder);
    equal((await inspectRunLock(experimentDir))?.alive, true);
  });
});
