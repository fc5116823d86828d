// Locates the vega, vega-lite and vega-embed browser bundles in node_modules, so report.html can
// inline them (no CDN: the report must open offline).

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Browser bundles in load order: vega-embed needs the `vega` and `vegaLite` globals. */
const BUNDLES = [
  { pkg: "vega", file: "build/vega.min.js" },
  { pkg: "vega-lite", file: "build/vega-lite.min.js" },
  { pkg: "vega-embed", file: "build/vega-embed.min.js" },
] as const;

/**
 * The package root of an npm package: resolve its main entry (the bundles themselves are not in
 * the packages' `exports`), then walk up to the folder whose package.json names it.
 */
async function packageRoot(pkg: string): Promise<string> {
  let dir = dirname(fileURLToPath(import.meta.resolve(pkg)));
  for (;;) {
    try {
      const meta = JSON.parse(await Deno.readTextFile(join(dir, "package.json")));
      if (meta.name === pkg) return dir;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the package root of ${pkg}`);
    dir = parent;
  }
}

let cache: Promise<{ name: string; code: string }[]> | null = null;

/** The three bundles' source code (read once per process). */
export function browserBundles(): Promise<{ name: string; code: string }[]> {
  cache ??= Promise.all(BUNDLES.map(async ({ pkg, file }) => {
    const root = await packageRoot(pkg);
    return { name: `${pkg}/${file}`, code: await Deno.readTextFile(join(root, file)) };
  }));
  cache.catch(() => (cache = null));
  return cache;
}
