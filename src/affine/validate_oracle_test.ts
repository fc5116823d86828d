/**
 * The sweep-based map validation against an oracle that enumerates elements: on small random
 * maps with random defects (a holder dropped or added, a piece moved in `F`), `normalizeMap` and
 * `validateMapForPlanning` accept exactly the maps in which every shard address is written once,
 * no rank holds an element twice, every piece's locations are exactly the ranks holding each of
 * its elements, and (for planning) every element is held.
 */

import { equal, ok } from "node:assert/strict";
import { randInt, randomMap, randomShape } from "./_testing.ts";
import { seededRandom } from "../../test/_testing/seeded_random.ts";
import { InvalidMapError } from "./affine_errors.ts";
import { forEachAddressPair, numelOf, rowMajorStrides } from "./map.ts";
import type { ParamAffineMap } from "./map.ts";
import { normalizeMap, validateMapForPlanning } from "./validate_map.ts";

/** The oracle: `null` when valid, else which rule fails. */
function oracle(map: ParamAffineMap, planning: boolean): string | null {
  const full = numelOf(map.logicalShape);
  const holders: Set<number>[] = Array.from({ length: full }, () => new Set());
  for (const [rank, shard] of map.ranks) {
    const written = new Set<number>();
    let count = 0;
    for (const p of shard.pieces) {
      let clash = false;
      forEachAddressPair(p.shape, p.destOffset, p.destStrides, p.sourceOffset, p.sourceStrides, (
        d,
        s,
      ) => {
        count++;
        if (written.has(d)) clash = true;
        written.add(d);
        if (holders[s].has(rank)) clash = true;
        holders[s].add(rank);
      });
      if (clash) return "address or element twice";
    }
    if (count !== numelOf(shard.shardShape)) return "shard not filled";
  }
  for (const shard of map.ranks.values()) {
    for (const p of shard.pieces) {
      const want = p.locations.join(",");
      let bad = false;
      forEachAddressPair(p.shape, p.sourceOffset, p.sourceStrides, 0, p.shape.map(() => 0), (s) => {
        if ([...holders[s]].sort((a, b) => a - b).join(",") !== want) bad = true;
      });
      if (bad) return "locations";
    }
  }
  if (planning && holders.some((h) => h.size === 0)) return "uncovered";
  return null;
}

/** One random defect that keeps every piece a valid box inside `F` and its shard. */
function damage(r: () => number, map: ParamAffineMap): void {
  const ranks = [...map.ranks.keys()];
  const withPieces = ranks.filter((k) => map.ranks.get(k)!.pieces.some((p) => numelOf(p.shape)));
  if (withPieces.length === 0) return;
  const shard = map.ranks.get(withPieces[randInt(r, 0, withPieces.length - 1)])!;
  const live = shard.pieces.filter((p) => numelOf(p.shape) > 0);
  const piece = live[randInt(r, 0, live.length - 1)];
  const kind = randInt(r, 0, 2);
  if (kind === 0 && piece.locations.length > 1) {
    piece.locations = piece.locations.filter((_, i) =>
      i !== randInt(r, 0, piece.locations.length - 1)
    );
  } else if (kind === 1) {
    const extra = ranks.filter((k) => !piece.locations.includes(k));
    if (extra.length > 0) {
      piece.locations = [...piece.locations, extra[randInt(r, 0, extra.length - 1)]].sort((a, b) =>
        a - b
      );
    }
  } else {
    // Move the piece to another origin in F where it still fits.
    const shape = map.logicalShape;
    const origin = shape.map((d, i) => randInt(r, 0, d - piece.shape[i]));
    const strides = rowMajorStrides(shape);
    piece.sourceOffset = origin.reduce((a, c, i) => a + c * strides[i], 0);
  }
}

function verdict(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (e) {
    if (e instanceof InvalidMapError) return "invalid";
    throw e;
  }
}

Deno.test("map validation accepts exactly what element enumeration accepts (3000 cases)", () => {
  let broken = 0;
  for (let seed = 1; seed <= 3000; seed++) {
    const r = seededRandom(seed * 31337);
    const shape = randomShape(r);
    if (numelOf(shape) === 0) continue;
    const map = randomMap(r, shape, randInt(r, 1, 4));
    const defects = randInt(r, 0, 2);
    for (let k = 0; k < defects; k++) damage(r, map);
    for (const planning of [false, true]) {
      const expected = oracle(map, planning) === null ? null : "invalid";
      const got = verdict(() =>
        planning ? validateMapForPlanning(map, "m") : normalizeMap(map, "m")
      );
      equal(got, expected, `seed ${seed} planning ${planning}: ${oracle(map, planning)}`);
      if (expected !== null) broken++;
    }
  }
  ok(broken > 1000, `only ${broken} broken maps`);
});
