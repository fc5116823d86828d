/**
 * Finds the Chromium that browser tests drive with playwright-core, so they pass on a machine that
 * has only Node and npm. By default Debian's `/usr/bin/chromium` when it is installed (CI installs
 * it), otherwise the headless Chromium that the `@sparticuz/chromium` npm package ships inside its
 * tarball: `bin/chromium.br` (brotli) and its NSS/NSPR/expat libraries in `bin/al2023.tar.br`,
 * decompressed once into `node_modules/.cache/parity-chromium/<version>/` and started with that
 * `lib/` folder on `LD_LIBRARY_PATH`, so it needs only glibc, libgcc and SQLite from the machine.
 *
 * `PARITY_CHROMIUM` forces a choice: `system` (Debian's), `npm` (the package's), or an absolute
 * path to a Chromium executable. There is no skip: a browser that cannot be found or started fails
 * the test with a one-sentence {@linkcode ChromiumError}.
 *
 * @module
 */

import { createReadStream, createWriteStream } from "node:fs";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { brotliDecompressSync, createBrotliDecompress } from "node:zlib";
import { type Browser, chromium } from "npm:playwright-core@1.65.1";
import { PROJECT } from "./cli_harness.ts";

/** The environment variable that forces a Chromium: `system`, `npm` or an absolute path. */
export const CHROMIUM_ENV = "PARITY_CHROMIUM";

/** Where Debian's `chromium` package installs the browser. */
export const SYSTEM_CHROMIUM = "/usr/bin/chromium";

/** The npm package that ships a Chromium binary in its tarball (pinned in deno.test.lock). */
export const NPM_CHROMIUM_PACKAGE = "@sparticuz/chromium";

/**
 * Flags for every browser test: no sandbox (tests run as root), no GPU, and nothing that reaches
 * the network by itself.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

/** A Chromium found by {@linkcode resolveChromium}. */
export interface ResolvedChromium {
  /** Where it came from: Debian's package, the npm package, or a path given in the variable. */
  source: "system" | "npm" | "path";
  /** The executable. */
  executablePath: string;
  /** Variables the browser process needs on top of the test's environment (empty for system). */
  env: Record<string, string>;
  /** A short name for messages, e.g. `npm @sparticuz/chromium 153.0.0`. */
  label: string;
}

/** A browser that cannot be found, unpacked or started; the message is one sentence. */
export class ChromiumError extends Error {
  /** Builds the error; `cause` keeps the underlying error for debugging. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ChromiumError";
  }
}

/** Options of {@linkcode resolveChromium}, for tests of the resolver itself. */
export interface ResolveChromiumOptions {
  /** The choice; defaults to `$PARITY_CHROMIUM` (unset or empty: system if present, else npm). */
  choice?: string;
  /** Debian's executable; defaults to {@linkcode SYSTEM_CHROMIUM}. */
  systemPath?: string;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.trim().split("\n")[0].replace(/\.$/, "");
}

/** Resolves the browser to use, unpacking the npm-shipped one if it is the choice. */
export async function resolveChromium(
  options: ResolveChromiumOptions = {},
): Promise<ResolvedChromium> {
  const choice = (options.choice ?? Deno.env.get(CHROMIUM_ENV) ?? "").trim();
  const systemPath = options.systemPath ?? SYSTEM_CHROMIUM;
  const system = (): ResolvedChromium => ({
    source: "system",
    executablePath: systemPath,
    env: {},
    label: `Debian chromium (${systemPath})`,
  });
  if (choice === "") return isFile(systemPath) ? system() : await npmChromium();
  if (choice === "npm") return await npmChromium();
  if (choice === "system") {
    if (isFile(systemPath)) return system();
    throw new ChromiumError(
      `${CHROMIUM_ENV}=system but ${systemPath} is missing: install it with ` +
        "`apt-get install -y chromium`, or unset the variable to use the npm-shipped Chromium.",
    );
  }
  if (choice.startsWith("/")) {
    if (isFile(choice)) return { source: "path", executablePath: choice, env: {}, label: choice };
    throw new ChromiumError(`${CHROMIUM_ENV}=${choice} names no file.`);
  }
  throw new ChromiumError(
    `${CHROMIUM_ENV} must be "system", "npm" or an absolute path to a Chromium, not "${choice}".`,
  );
}

/**
 * The npm package's root folder and version (its files are not in its `exports`). The literal
 * import installs it into node_modules on first use and pins it in deno.test.lock; the package
 * stays out of deno.json and deno.lock, so a plain run never downloads it.
 */
async function npmPackage(): Promise<{ root: string; version: string }> {
  const root = join(PROJECT, "node_modules", NPM_CHROMIUM_PACKAGE);
  try {
    await import("npm:@sparticuz/chromium@153.0.0");
    const meta = JSON.parse(await Deno.readTextFile(join(root, "package.json")));
    return { root, version: String(meta.version) };
  } catch (error) {
    throw new ChromiumError(
      `${NPM_CHROMIUM_PACKAGE} is not installed in ${root}: ${firstLine(error)}.`,
      { cause: error },
    );
  }
}

/** The folder the npm-shipped Chromium of `version` is unpacked into (git-ignored). */
export function npmChromiumCache(version: string): string {
  return join(PROJECT, "node_modules", ".cache", "parity-chromium", version);
}

/**
 * The npm-shipped Chromium, unpacked on first use. The files are written into a staging folder
 * that is renamed into place when complete, so concurrent test processes never see a half-written
 * browser; the loser of a race deletes its copy.
 */
export async function npmChromium(): Promise<ResolvedChromium> {
  if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64") {
    throw new ChromiumError(
      `${NPM_CHROMIUM_PACKAGE} ships Chromium for x86_64 Linux only, not ` +
        `${Deno.build.arch} ${Deno.build.os}: install a Chromium and set ${CHROMIUM_ENV} to its path.`,
    );
  }
  const { root, version } = await npmPackage();
  const cache = npmChromiumCache(version);
  const resolved: ResolvedChromium = {
    source: "npm",
    executablePath: join(cache, "chromium"),
    env: {
      LD_LIBRARY_PATH: join(cache, "lib"),
      FONTCONFIG_PATH: cache,
      FONTCONFIG_FILE: join(cache, "fonts.conf"),
    },
    label: `npm ${NPM_CHROMIUM_PACKAGE} ${version}`,
  };
  if (isFile(resolved.executablePath)) return resolved;
  const bin = join(root, "bin");
  await Deno.mkdir(dirname(cache), { recursive: true });
  const staging = await Deno.makeTempDir({ dir: dirname(cache), prefix: `${version}.staging-` });
  try {
    await unpack(bin, staging, cache);
    await Deno.chmod(staging, 0o755);
    try {
      await Deno.rename(staging, cache);
    } catch (error) {
      // Another test process finished first: keep its copy.
      if (!isFile(resolved.executablePath)) throw error;
    }
  } catch (error) {
    throw new ChromiumError(
      `Unpacking ${resolved.label} into ${cache} failed: ${firstLine(error)}.`,
      { cause: error },
    );
  } finally {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
  return resolved;
}

/**
 * Decompresses the binary, its libraries and fonts from `bin` into `dest`, which is renamed to
 * `final` afterwards (fonts.conf names the final folders).
 */
async function unpack(bin: string, dest: string, final: string): Promise<void> {
  const executable = join(dest, "chromium");
  await pipeline(
    createReadStream(join(bin, "chromium.br"), { highWaterMark: 1 << 22 }),
    createBrotliDecompress({ chunkSize: 1 << 21 }),
    createWriteStream(executable, { mode: 0o755 }),
  );
  await Deno.chmod(executable, 0o755);
  for (const archive of ["al2023.tar.br", "fonts.tar.br"]) {
    await extractTar(brotliDecompressSync(await Deno.readFile(join(bin, archive))), dest);
  }
  // The package's fonts.conf names Lambda's folders; this one names the unpacked fonts only.
  await Deno.writeTextFile(
    join(dest, "fonts.conf"),
    `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
      `  <dir>${escapeXml(join(final, "fonts"))}</dir>\n` +
      `  <cachedir>${escapeXml(join(final, "fontconfig-cache"))}</cachedir>\n</fontconfig>\n`,
  );
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function field(block: Uint8Array, start: number, length: number): string {
  const bytes = block.subarray(start, start + length);
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}

/** Extracts the regular files and folders of a ustar archive, refusing names that leave `dest`. */
async function extractTar(tar: Uint8Array, dest: string): Promise<void> {
  for (let offset = 0; offset + 512 <= tar.length;) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const prefix = field(header, 257, 6) === "ustar" ? field(header, 345, 155) : "";
    const name = (prefix ? `${prefix}/` : "") + field(header, 0, 100);
    const size = parseInt(field(header, 124, 12).trim() || "0", 8);
    const mode = parseInt(field(header, 100, 8).trim() || "644", 8) & 0o777;
    const type = field(header, 156, 1) || "0";
    const body = offset + 512;
    offset = body + Math.ceil(size / 512) * 512;
    if (type === "x" || type === "g") continue; // pax metadata: names here are plain ustar
    if (name.startsWith("/") || name.split("/").includes("..")) {
      throw new Error(`archive entry ${name} leaves the target folder`);
    }
    const path = join(dest, name);
    if (type === "5") {
      await Deno.mkdir(path, { recursive: true });
    } else if (type === "0") {
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.writeFile(path, tar.subarray(body, body + size), { mode });
    } else {
      throw new Error(`archive entry ${name} has unsupported type ${type}`);
    }
  }
}

/**
 * Starts the resolved Chromium headless under playwright-core with {@linkcode CHROMIUM_ARGS}.
 * Any failure, finding or starting it, is a {@linkcode ChromiumError} of one sentence.
 */
export async function launchChromium(options: ResolveChromiumOptions = {}): Promise<Browser> {
  const resolved = await resolveChromium(options);
  try {
    return await chromium.launch({
      executablePath: resolved.executablePath,
      args: [...CHROMIUM_ARGS],
      env: { ...Deno.env.toObject(), ...resolved.env },
      timeout: 60_000,
    });
  } catch (error) {
    throw new ChromiumError(
      `${resolved.label} did not start (set ${CHROMIUM_ENV}=system|npm|<path> to choose ` +
        `another): ${firstLine(error)}.`,
      { cause: error },
    );
  }
}
