/**
 * The one content digest of the pipeline: SHA-256 as lower-case hex, of text or bytes (cache
 * keys, output hashes, the environment's digests, the manifest's records).
 *
 * @module
 */

import { createHash } from "node:crypto";

/**
 * SHA-256 of text or bytes, hex, computed in place by the runtime's native hasher: for the small
 * inputs of the pipeline that is several times faster than a round trip through WebCrypto.
 */
export function sha256HexSync(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** {@linkcode sha256HexSync} for callers that await it. */
export function sha256Hex(data: string | Uint8Array): Promise<string> {
  return Promise.resolve(sha256HexSync(data));
}
