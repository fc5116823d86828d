// Report files are written through a temporary file, so a reader never sees half a report.

/** Writes `text` to `path` via a temporary sibling and a rename. */
export async function writeTextAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  try {
    await Deno.writeTextFile(tmp, text);
    await Deno.rename(tmp, path);
  } catch (error) {
    await Deno.remove(tmp).catch(() => {});
    throw error;
  }
}
