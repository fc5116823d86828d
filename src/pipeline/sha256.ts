/**
 * The one content digest of the pipeline: SHA-256 as lower-case hex, of text or bytes (cache
 * keys, output hashes, the environment's digests, the manifest's records).
 *
 * @module
 */

/** SHA-256 of text or bytes, hex. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
