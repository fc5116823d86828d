/** * No two modules of `src/` (or of the trainer, `reference_trainer/`) import each other, directly or round a longer loop: a circle means two
 * files share one job, and it makes the load order decide which of them sees the other's exports.
 * Type-only imports count too. Test files and test helpers are exempt, as in the layers test.
 */

import assert from "node:assert/strict";
import { dirname, relative, resolve } from "node:path";
import {
  type HarnessModule,
  harnessModules,
  isTestCode,
  SRC,
  TRAINER,
} from "./_testing/source_tree.ts";

/** Module → the modules it imports statically (`import`, `import type`, `export … from`). */
async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for await (const { file, rel, text: source } of _modules()) {
    // Comments go first: a JSDoc example imports its own module.
    const text = source.replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/^\s*\/\/.*$/gm, "");
    const targets = new Set<string>();
    for (const [, spec] of text.matchAll(/(?:from|^import)\s+"(\.[^"]+)"/gm)) {
      const target = relative(SRC, resolve(dirname(file), spec));
      if (!isTestCode(target)) targets.add(target);
    }
    graph.set(rel, [...targets].sort());
  }
  return graph;
}

/** The harness's modules and the trainer's (outside `src/`: keyed `../reference_trainer/…`). */
async function* _modules(): AsyncGenerator<HarnessModule> {
  yield* harnessModules();
  yield* harnessModules(TRAINER);
}

/** The strongly connected components of more than one module, or of one importing itself. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>(), low = new Map<string, number>();
  const stack: string[] = [], onStack = new Set<string>(), out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

Deno.test("no two modules of src/ import each other, directly or round a loop", async () => {
  assert.deepEqual(circles(await importGraph()), []);
});

Deno.test("the circle check finds a loop of three and a direct pair", () => {
  const graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", ["a.ts", "d.ts"]],
    ["d.ts", ["e.ts"]],
    ["e.ts", ["d.ts"]],
    ["f.ts", []],
  ]);
  assert.deepEqual(circles(graph), [["d.ts", "e.ts"], ["a.ts", "b.ts", "c.ts"]]);
});
