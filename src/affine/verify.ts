/**
 * The plan verifier: judges a plan file on its own, whoever produced it, without any of the
 * planner's code. It uses only `map.ts` parsing and its own address arithmetic.
 *
 * Everything is reduced to **runs**: maximal address ranges that are contiguous in both views of
 * a piece or a segment. A map becomes, per rank, a sorted list of `(shard address, logical index,
 * length)` runs; a segment becomes `(target address, source address, length)` runs. Checks:
 *
 * - maps: parseable affine map v1, equal logical shapes, scale 1, non-negative strides, each
 *   piece in bounds of `F` and of its shard; each rank's runs tile its shard exactly (no overlap,
 *   no gap); every logical element has a holder, no rank holds one twice, and every piece's
 *   `locations` equal the set of ranks holding each of its elements (homogeneity);
 * - processes: when a mapping is given, it names every location of every map;
 * - each segment, in order: well-formed fields, a non-empty shape, strides matching the shape,
 *   source and target locations that exist, every address in bounds of both shards, and for
 *   every element: the source address holds the same logical element the target address stands
 *   for (so the source location holds it), and `logical_origin`, when present, is where the
 *   segment starts;
 * - per parameter: the target runs of all segments tile every target shard exactly once.
 *
 * Cost is O(runs · log runs): a segment contiguous on both sides is one run, whatever its size.
 *
 * @module
 */

import { AffineError } from "./affine_errors.ts";
import { copyBox, extract, mapFromDict, numelOf } from "./map.ts";
import type { ParamAffineMap } from "./map.ts";
import { MAX_ELEMENT_SIZE, type PlanFile } from "./plan_file.ts";

/** Traffic figures of a plan. */
export interface PlanStats {
  /** Parameters in the plan. */
  parameters: number;
  /** Segments in the plan. */
  segments: number;
  /** Elements copied (every segment, local or not). */
  movedElements: number;
  /** Bytes copied (elements × element_size, every segment). */
  movedBytes: number;
  /** Bytes whose source and target locations map to the same process (0 without mappings). */
  localBytes: number;
  /** `movedBytes − localBytes`: bytes that cross processes. */
  remoteBytes: number;
  /**
   * Remote bytes sent, per sending process: keyed by process id (as a string) when
   * `source_processes` is given, else `source:<location>`. Every source process is listed,
   * idle ones with 0.
   */
  sendBytesByProcess: Record<string, number>;
  /** Remote bytes received, per receiving process (`target:<location>` without a mapping). */
  receiveBytesByProcess: Record<string, number>;
  /** Largest entry of `sendBytesByProcess` (the plan's max process load). */
  maxProcessSendBytes: number;
  /** Mean of `sendBytesByProcess` over every source process. */
  meanProcessSendBytes: number;
  /** Largest entry of `receiveBytesByProcess`. */
  maxProcessReceiveBytes: number;
  /** Mean of `receiveBytesByProcess` over every target process. */
  meanProcessReceiveBytes: number;
  /** Whether both process mappings were given. */
  processesMapped: boolean;
}

/** The verifier's answer. */
export interface PlanVerdict {
  /** Whether the plan passed every check (and the execution, when asked). */
  ok: boolean;
  /** The first problem found, prefixed with where (`parameters.<name>.segments[<i>]: ...`). */
  error: string | null;
  /** Traffic figures; null when the plan was rejected. */
  stats: PlanStats | null;
  /** Whether the plan was executed on synthetic data and compared with `extract`. */
  executed: boolean;
}

/** Options of {@link verifyPlan}. */
export interface VerifyPlanOptions {
  /** Also execute the plan on synthetic data and compare every target shard with `extract`. */
  execute?: boolean;
  /** Refuse to execute parameters with more elements than this (default 2^26). */
  maxExecuteElements?: number;
}

/** A rejection carrying its full message. */
class Rejection extends AffineError {}

function reject(message: string): never {
  throw new Rejection(message);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------
// Runs

/** A growable list of `(a, b, length)` triples. */
class Runs {
  a = new Float64Array(64);
  b = new Float64Array(64);
  len = new Float64Array(64);
  n = 0;
  push(a: number, b: number, len: number): void {
    if (this.n === this.a.length) {
      const grow = (x: Float64Array) => {
        const y = new Float64Array(x.length * 2);
        y.set(x);
        return y;
      };
      this.a = grow(this.a);
      this.b = grow(this.b);
      this.len = grow(this.len);
    }
    this.a[this.n] = a;
    this.b[this.n] = b;
    this.len[this.n] = len;
    this.n++;
  }
}

/**
 * Appends the runs of a strided box seen through two views: maximal blocks of trailing axes
 * that are contiguous (stride 1 inside, row-major across) on both sides at once.
 */
const scratchAxes = new Int32Array(64);
const scratchIndex = new Float64Array(64);

function decompose(
  shape: readonly number[],
  offA: number,
  stridesA: readonly number[],
  offB: number,
  stridesB: readonly number[],
  out: Runs,
): void {
  // Axes of extent 1 have no effect on addresses; drop them (scratch space: no allocation).
  const axes = shape.length <= 64 ? scratchAxes : new Int32Array(shape.length);
  let count = 0;
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 0) return;
    if (shape[i] > 1) axes[count++] = i;
  }
  let runLen = 1;
  let outer = count;
  if (count > 0) {
    const last = axes[count - 1];
    if (stridesA[last] === 1 && stridesB[last] === 1) {
      runLen = shape[last];
      outer = count - 1;
      while (outer > 0) {
        const ax = axes[outer - 1];
        if (stridesA[ax] !== runLen || stridesB[ax] !== runLen) break;
        runLen *= shape[ax];
        outer--;
      }
    }
  }
  if (outer === 0) {
    out.push(offA, offB, runLen);
    return;
  }
  const index = outer <= 64 ? scratchIndex : new Float64Array(outer);
  index.fill(0, 0, outer);
  for (;;) {
    let a = offA, b = offB;
    for (let k = 0; k < outer; k++) {
      a += index[k] * stridesA[axes[k]];
      b += index[k] * stridesB[axes[k]];
    }
    out.push(a, b, runLen);
    let k = outer - 1;
    while (k >= 0) {
      if (++index[k] < shape[axes[k]]) break;
      index[k] = 0;
      k--;
    }
    if (k < 0) return;
  }
}

/** One rank's runs sorted by shard address: address → logical index. */
interface RankTable {
  rank: number;
  numel: number;
  addr: Float64Array;
  logical: Float64Array;
  len: Float64Array;
  count: number;
}

/** Index of the run containing `address`, or -1. */
function findRun(t: RankTable, address: number): number {
  let lo = 0, hi = t.count - 1, found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (t.addr[mid] <= address) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found >= 0 && address < t.addr[found] + t.len[found]) return found;
  return -1;
}

function coordText(index: number, shape: readonly number[]): string {
  const c = new Array<number>(shape.length);
  let rest = index;
  for (let i = shape.length - 1; i >= 0; i--) {
    c[i] = shape[i] > 0 ? rest % shape[i] : 0;
    rest = shape[i] > 0 ? Math.floor(rest / shape[i]) : 0;
  }
  return `[${c.join(", ")}]`;
}

function maxAddress(shape: readonly number[], offset: number, strides: readonly number[]): number {
  let a = offset;
  for (let i = 0; i < shape.length; i++) a += (shape[i] - 1) * strides[i];
  return a;
}

/** Parsed and checked map of one side: per-rank tables plus who holds what. */
interface SideTables {
  map: ParamAffineMap;
  ranks: Map<number, RankTable>;
  /** Per rank: its runs by logical start (for naming holders in messages). */
  holdersOf: (logical: number) => number[];
}

function buildSide(raw: unknown, where: string): SideTables {
  let map: ParamAffineMap;
  try {
    map = mapFromDict(raw, where);
  } catch (e) {
    reject((e as Error).message);
  }
  const full = numelOf(map.logicalShape);
  const runs = new Runs();
  const runRank: number[] = [];
  const runLocKey: string[] = [];
  const ranks = new Map<number, RankTable>();
  for (const [rank, shard] of map.ranks) {
    const numel = numelOf(shard.shardShape);
    const first = runs.n;
    shard.pieces.forEach((piece, i) => {
      const at = `${where}.ranks.${rank}.pieces[${i}]`;
      if (piece.shape.length !== map.logicalShape.length) {
        reject(`${at}: ${piece.shape.length} axes, the parameter has ${map.logicalShape.length}`);
      }
      if (piece.scale !== 1) reject(`${at}: scale ${piece.scale}; only scale 1 is copied`);
      if (numelOf(piece.shape) === 0) return;
      if (!piece.locations.includes(rank)) {
        reject(`${at}: locations [${piece.locations.join(", ")}] omit rank ${rank} holding it`);
      }
      if (maxAddress(piece.shape, piece.sourceOffset, piece.sourceStrides) >= full) {
        reject(`${at}: reaches past the ${full}-element logical tensor`);
      }
      if (maxAddress(piece.shape, piece.destOffset, piece.destStrides) >= numel) {
        reject(`${at}: reaches past the ${numel}-element shard`);
      }
      const before = runs.n;
      decompose(
        piece.shape,
        piece.destOffset,
        piece.destStrides,
        piece.sourceOffset,
        piece.sourceStrides,
        runs,
      );
      const key = piece.locations.join(",");
      for (let k = before; k < runs.n; k++) {
        runRank.push(rank);
        runLocKey.push(key);
      }
    });
    // Sort this rank's runs by shard address and prove they tile the shard once.
    const count = runs.n - first;
    const order = Array.from({ length: count }, (_, k) => first + k)
      .sort((x, y) => runs.a[x] - runs.a[y]);
    const table: RankTable = {
      rank,
      numel,
      addr: new Float64Array(count),
      logical: new Float64Array(count),
      len: new Float64Array(count),
      count,
    };
    let cursor = 0;
    order.forEach((r, k) => {
      table.addr[k] = runs.a[r];
      table.logical[k] = runs.b[r];
      table.len[k] = runs.len[r];
      if (runs.a[r] < cursor) {
        reject(`${where}.ranks.${rank}: pieces overlap at shard address ${runs.a[r]}`);
      }
      if (runs.a[r] > cursor) {
        reject(
          `${where}.ranks.${rank}: shard addresses [${cursor}, ${runs.a[r]}) belong to no piece`,
        );
      }
      cursor = runs.a[r] + runs.len[r];
    });
    if (cursor !== numel) {
      reject(`${where}.ranks.${rank}: shard addresses [${cursor}, ${numel}) belong to no piece`);
    }
    ranks.set(rank, table);
  }
  sweepHolders(runs, runRank, runLocKey, full, map.logicalShape, where);
  const holdersOf = (logical: number) => {
    const out: number[] = [];
    for (let r = 0; r < runs.n; r++) {
      if (runs.b[r] <= logical && logical < runs.b[r] + runs.len[r]) out.push(runRank[r]);
    }
    return [...new Set(out)].sort((a, b) => a - b);
  };
  return { map, ranks, holdersOf };
}

/**
 * Sweeps all runs in logical order: every element needs a holder, no rank may hold an element
 * twice, and each covering piece's `locations` must equal the ranks covering that element.
 */
function sweepHolders(
  runs: Runs,
  runRank: number[],
  runLocKey: string[],
  full: number,
  shape: readonly number[],
  where: string,
): void {
  const events: number[] = [];
  for (let r = 0; r < runs.n; r++) events.push(r, -(r + 1));
  const pos = (e: number) => (e >= 0 ? runs.b[e] : runs.b[-e - 1] + runs.len[-e - 1]);
  // At equal positions ends come first, so touching runs never look overlapping.
  events.sort((x, y) => pos(x) - pos(y) || (x < 0 ? 0 : 1) - (y < 0 ? 0 : 1));
  const active = new Set<number>();
  const perRank = new Map<number, number>();
  let cursor = 0;
  let i = 0;
  while (i < events.length) {
    const p = pos(events[i]);
    if (active.size === 0 && p > cursor) {
      reject(`${where}: logical element ${coordText(cursor, shape)} has no holder`);
    }
    while (i < events.length && pos(events[i]) === p) {
      const e = events[i++];
      const r = e >= 0 ? e : -e - 1;
      const rank = runRank[r];
      if (e >= 0) {
        active.add(r);
        perRank.set(rank, (perRank.get(rank) ?? 0) + 1);
        if (perRank.get(rank)! > 1) {
          reject(`${where}: rank ${rank} holds logical element ${coordText(p, shape)} twice`);
        }
      } else {
        active.delete(r);
        const left = perRank.get(rank)! - 1;
        if (left === 0) perRank.delete(rank);
        else perRank.set(rank, left);
      }
    }
    if (active.size > 0) {
      const holders = [...perRank.keys()].sort((a, b) => a - b).join(",");
      for (const r of active) {
        if (runLocKey[r] !== holders) {
          reject(
            `${where}: a piece of rank ${runRank[r]} declares locations [${runLocKey[r]}] but ` +
              `logical element ${coordText(p, shape)} is held by [${holders}]`,
          );
        }
      }
    }
    cursor = p;
  }
  if (cursor < full) reject(`${where}: logical element ${coordText(cursor, shape)} has no holder`);
}

// ---------------------------------------------------------------------------------------------
// Segments

interface ParsedView {
  loc: number;
  offset: number;
  strides: number[];
}

/** Where a field is, built only when a message needs it (the hot path builds no strings). */
type Where = () => string;

function intList(v: unknown, at: Where, min: number): number[] {
  if (!Array.isArray(v)) reject(`${at()}: expected a list of integers`);
  for (let k = 0; k < v.length; k++) {
    const x = v[k];
    if (typeof x !== "number" || !Number.isInteger(x) || x < min) {
      reject(`${at()}: ${JSON.stringify(x)} is not an integer >= ${min}`);
    }
  }
  return v as number[];
}

function parseView(v: unknown, at: Where, nd: number): ParsedView {
  if (!Array.isArray(v) || v.length !== 3) reject(`${at()}: expected [location, offset, strides]`);
  const loc = v[0], offset = v[1];
  if (typeof loc !== "number" || !Number.isInteger(loc) || loc < 0) {
    reject(`${at()}[0]: location must be a non-negative integer`);
  }
  if (typeof offset !== "number" || !Number.isInteger(offset) || offset < 0) {
    reject(`${at()}[1]: offset must be a non-negative integer`);
  }
  const s = intList(v[2], () => `${at()}[2]`, 0);
  if (s.length !== nd) reject(`${at()}[2]: ${s.length} strides for a ${nd}-axis shape`);
  return { loc, offset, strides: s };
}

interface Accounting {
  sourceProcesses: Map<number, number> | null;
  targetProcesses: Map<number, number> | null;
  send: Map<string, number>;
  receive: Map<string, number>;
  moved: number;
  movedBytes: number;
  local: number;
  segments: number;
}

function processesOf(raw: Record<string, number>): Map<number, number> | null {
  const entries = Object.entries(raw);
  if (entries.length === 0) return null;
  return new Map(entries.map(([k, v]) => [Number(k), v]));
}

function verifyParameter(name: string, entry: Record<string, unknown>, acc: Accounting): void {
  const at = `parameters.${name}`;
  const elementSize = entry.element_size;
  if (typeof elementSize !== "number" || !Number.isInteger(elementSize) || elementSize <= 0) {
    reject(`${at}.element_size: expected a positive integer`);
  }
  if (elementSize > MAX_ELEMENT_SIZE) {
    reject(`${at}.element_size: ${elementSize} bytes per element; at most ${MAX_ELEMENT_SIZE}`);
  }
  const source = buildSide(entry.source_map, `${at}.source_map`);
  const target = buildSide(entry.target_map, `${at}.target_map`);
  const shape = source.map.logicalShape;
  if (shape.join(",") !== target.map.logicalShape.join(",")) {
    reject(
      `${at}: source_map describes [${shape.join(", ")}], target_map [${
        target.map.logicalShape.join(", ")
      }]`,
    );
  }
  for (
    const [side, processes, tables] of [
      ["source", acc.sourceProcesses, source.ranks],
      ["target", acc.targetProcesses, target.ranks],
    ] as const
  ) {
    if (!processes) continue;
    for (const rank of tables.keys()) {
      if (!processes.has(rank)) {
        reject(`${at}.${side}_map: location ${rank} has no entry in ${side}_processes`);
      }
    }
  }
  // Every target shard gets a base in one address line, so one sort proves exactly-once.
  const bases = new Map<number, number>();
  const baseList: { rank: number; base: number }[] = [];
  let total = 0;
  for (const [rank, t] of target.ranks) {
    bases.set(rank, total);
    baseList.push({ rank, base: total });
    total += t.numel;
  }
  if (!Array.isArray(entry.segments)) reject(`${at}.segments: expected a list`);
  const segments = entry.segments as unknown[];
  const runs = new Runs();
  const written = new Runs(); // a: global target address, b: segment index, len
  // Bytes per (source, target) location pair; processes are resolved once per pair below.
  const pairStride = Math.max(0, ...target.ranks.keys()) + 1;
  const pairBytes = new Map<number, number>();
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    if (!isRecord(seg)) reject(`${at}.segments[${i}]: expected an object`);
    const segShape = intList(seg.shape, () => `${at}.segments[${i}].shape`, 0);
    let numel = 1;
    for (const d of segShape) numel *= d;
    if (numel === 0) reject(`${at}.segments[${i}]: shape [${segShape.join(", ")}] copies nothing`);
    const src = parseView(seg.source, () => `${at}.segments[${i}].source`, segShape.length);
    const tgt = parseView(seg.target, () => `${at}.segments[${i}].target`, segShape.length);
    const srcTable = source.ranks.get(src.loc);
    if (!srcTable) {
      reject(`${at}.segments[${i}]: source location ${src.loc} is not a rank of the source map`);
    }
    const tgtTable = target.ranks.get(tgt.loc);
    if (!tgtTable) {
      reject(`${at}.segments[${i}]: target location ${tgt.loc} is not a rank of the target map`);
    }
    const srcMax = maxAddress(segShape, src.offset, src.strides);
    if (srcMax >= srcTable.numel) {
      reject(
        `${at}.segments[${i}]: reads source location ${src.loc} up to address ${srcMax}, past its ` +
          `${srcTable.numel}-element shard`,
      );
    }
    const tgtMax = maxAddress(segShape, tgt.offset, tgt.strides);
    if (tgtMax >= tgtTable.numel) {
      reject(
        `${at}.segments[${i}]: writes target location ${tgt.loc} up to address ${tgtMax}, past its ` +
          `${tgtTable.numel}-element shard`,
      );
    }
    runs.n = 0;
    decompose(segShape, tgt.offset, tgt.strides, src.offset, src.strides, runs);
    const base = bases.get(tgt.loc)!;
    for (let r = 0; r < runs.n; r++) written.push(base + runs.a[r], i, runs.len[r]);
    checkRunsHold(`${at}.segments[${i}]`, runs, { src, tgt, srcTable, tgtTable, source, shape });
    if (seg.logical_origin !== undefined) {
      checkOrigin(`${at}.segments[${i}].logical_origin`, seg.logical_origin, tgt, tgtTable, shape);
    }
    const bytes = numel * elementSize;
    acc.segments++;
    acc.moved += numel;
    acc.movedBytes += bytes;
    const pair = src.loc * pairStride + tgt.loc;
    pairBytes.set(pair, (pairBytes.get(pair) ?? 0) + bytes);
  }
  checkExactlyOnce(at, written, total, baseList);
  bookTraffic(acc, pairBytes, pairStride, source, target);
}

/** What {@link checkRunsHold} compares: the segment's two views and the sides' tables. */
interface SegmentSides {
  src: ParsedView;
  tgt: ParsedView;
  srcTable: RankTable;
  tgtTable: RankTable;
  source: SideTables;
  shape: readonly number[];
}

/** Proves every run of a segment reads, at each target address, the logical element it expects. */
function checkRunsHold(
  at: string,
  runs: Runs,
  { src, tgt, srcTable, tgtTable, source, shape }: SegmentSides,
): void {
  for (let r = 0; r < runs.n; r++) {
    let tAddr = runs.a[r], sAddr = runs.b[r], left = runs.len[r];
    while (left > 0) {
      const ti = findRun(tgtTable, tAddr);
      const tTake = Math.min(left, tgtTable.addr[ti] + tgtTable.len[ti] - tAddr);
      let logical = tgtTable.logical[ti] + (tAddr - tgtTable.addr[ti]);
      let part = tTake;
      while (part > 0) {
        const si = findRun(srcTable, sAddr);
        const sLogical = srcTable.logical[si] + (sAddr - srcTable.addr[si]);
        if (sLogical !== logical) {
          const holders = source.holdersOf(logical);
          const why = holders.includes(src.loc)
            ? `location ${src.loc} holds it at another address`
            : `location ${src.loc} does not hold it (holders: [${holders.join(", ")}])`;
          reject(
            `${at}: target location ${tgt.loc} address ${tAddr} expects logical element ` +
              `${coordText(logical, shape)}, but source location ${src.loc} address ${sAddr} ` +
              `holds ${coordText(sLogical, shape)}; ${why}`,
          );
        }
        const sTake = Math.min(part, srcTable.addr[si] + srcTable.len[si] - sAddr);
        part -= sTake;
        sAddr += sTake;
        logical += sTake;
      }
      left -= tTake;
      tAddr += tTake;
    }
  }
}

/** A segment's declared `logical_origin` must be the logical element it starts at. */
function checkOrigin(
  at: string,
  raw: unknown,
  tgt: ParsedView,
  tgtTable: RankTable,
  shape: readonly number[],
): void {
  const origin = intList(raw, () => at, 0);
  const ti = findRun(tgtTable, tgt.offset);
  const first = tgtTable.logical[ti] + (tgt.offset - tgtTable.addr[ti]);
  if (coordText(first, shape) !== `[${origin.join(", ")}]`) {
    reject(`${at}: [${origin.join(", ")}], but the segment starts at ${coordText(first, shape)}`);
  }
}

/**
 * Books a parameter's bytes per (source, target) location pair as local or sent and received by
 * process; every process of the maps is listed, idle ones with 0, so the mean counts them.
 */
function bookTraffic(
  acc: Accounting,
  pairBytes: Map<number, number>,
  pairStride: number,
  source: SideTables,
  target: SideTables,
): void {
  for (const [pair, bytes] of pairBytes) {
    const sLoc = Math.floor(pair / pairStride), tLoc = pair % pairStride;
    const sp = acc.sourceProcesses?.get(sLoc);
    const tp = acc.targetProcesses?.get(tLoc);
    if (sp !== undefined && tp !== undefined && sp === tp) acc.local += bytes;
    else {
      const sk = sp !== undefined ? String(sp) : `source:${sLoc}`;
      const tk = tp !== undefined ? String(tp) : `target:${tLoc}`;
      acc.send.set(sk, (acc.send.get(sk) ?? 0) + bytes);
      acc.receive.set(tk, (acc.receive.get(tk) ?? 0) + bytes);
    }
  }
  for (const rank of source.ranks.keys()) {
    const p = acc.sourceProcesses?.get(rank);
    const k = p !== undefined ? String(p) : `source:${rank}`;
    if (!acc.send.has(k)) acc.send.set(k, 0);
  }
  for (const rank of target.ranks.keys()) {
    const p = acc.targetProcesses?.get(rank);
    const k = p !== undefined ? String(p) : `target:${rank}`;
    if (!acc.receive.has(k)) acc.receive.set(k, 0);
  }
}

/** Proves the written target runs cover `[0, total)` of the target address line exactly once. */
function checkExactlyOnce(
  at: string,
  written: Runs,
  total: number,
  baseList: { rank: number; base: number }[],
): void {
  const n = written.n;
  const locate = (global: number) => {
    let k = baseList.length - 1;
    while (k > 0 && baseList[k].base > global) k--;
    return { rank: baseList[k].rank, address: global - baseList[k].base };
  };
  let scale = 1;
  while (scale <= n) scale *= 2;
  let order: ArrayLike<number>;
  const packed = total * scale < Number.MAX_SAFE_INTEGER;
  if (packed) {
    // One native numeric sort of `address · 2^k + run` keys.
    const keys = new Float64Array(n);
    for (let r = 0; r < n; r++) keys[r] = written.a[r] * scale + r;
    keys.sort();
    const idx = new Uint32Array(n);
    for (let r = 0; r < n; r++) idx[r] = keys[r] - Math.floor(keys[r] / scale) * scale;
    order = idx;
  } else {
    order = Array.from({ length: n }, (_, r) => r).sort((x, y) =>
      written.a[x] - written.a[y] || x - y
    );
  }
  let cursor = 0, lastSeg = -1;
  for (let k = 0; k < n; k++) {
    const r = order[k];
    const start = written.a[r], seg = written.b[r];
    if (start < cursor) {
      const { rank, address } = locate(start);
      const later = Math.max(seg, lastSeg), earlier = Math.min(seg, lastSeg);
      reject(
        seg === lastSeg
          ? `${at}.segments[${seg}]: writes target location ${rank} address ${address} twice`
          : `${at}.segments[${later}]: target location ${rank} address ${address} is also ` +
            `written by segments[${earlier}]`,
      );
    }
    if (start > cursor) {
      const { rank, address } = locate(cursor);
      const gapEnd = Math.min(start, nextBase(baseList, rank, total));
      const after = lastSeg >= 0 ? ` (gap after segments[${lastSeg}])` : "";
      reject(
        `${at}: target location ${rank} addresses [${address}, ${
          address + gapEnd - cursor
        }) are written by no segment${after}`,
      );
    }
    cursor = start + written.len[r];
    lastSeg = seg;
  }
  if (cursor < total) {
    const { rank, address } = locate(cursor);
    const after = lastSeg >= 0 ? ` (gap after segments[${lastSeg}])` : "";
    reject(
      `${at}: target location ${rank} addresses [${address}, ${
        address + nextBase(baseList, rank, total) - cursor
      }) are written by no segment${after}`,
    );
  }
}

function nextBase(baseList: { rank: number; base: number }[], rank: number, total: number): number {
  const k = baseList.findIndex((b) => b.rank === rank);
  return k + 1 < baseList.length ? baseList[k + 1].base : total;
}

// ---------------------------------------------------------------------------------------------
// Execution

/**
 * Executes one parameter's segments: copies from source shards into fresh target shards (one
 * per target-map rank, zero-filled, of the source shards' array type).
 */
export function executeSegments<T extends Float32Array | Float64Array | Uint16Array | Int32Array>(
  entry: { target_map: unknown; segments: readonly unknown[] },
  sources: ReadonlyMap<number, T>,
): Map<number, T> {
  const targetMap = mapFromDict(entry.target_map, "target_map");
  const like = [...sources.values()][0];
  if (!like) throw new Error("executeSegments: no source shards");
  const ctor = like.constructor as new (n: number) => T;
  const out = new Map<number, T>();
  for (const [rank, shard] of targetMap.ranks) out.set(rank, new ctor(numelOf(shard.shardShape)));
  for (const raw of entry.segments) {
    const seg = raw as {
      shape: number[];
      source: [number, number, number[]];
      target: [number, number, number[]];
    };
    const from = sources.get(seg.source[0]);
    const to = out.get(seg.target[0]);
    if (!from || !to) throw new Error(`executeSegments: no shard for ${JSON.stringify(seg)}`);
    copyBox(seg.shape, from, seg.source[1], seg.source[2], to, seg.target[1], seg.target[2]);
  }
  return out;
}

function executeAndCompare(name: string, entry: Record<string, unknown>, limit: number): void {
  const at = `parameters.${name}`;
  const sourceMap = mapFromDict(entry.source_map, `${at}.source_map`);
  const targetMap = mapFromDict(entry.target_map, `${at}.target_map`);
  const n = numelOf(sourceMap.logicalShape);
  if (n > limit) reject(`${at}: ${n} elements, over the execution limit ${limit}`);
  // Element i holds i + 1, so a zero in a target shard means "never written".
  const full = new Float64Array(n);
  for (let i = 0; i < n; i++) full[i] = i + 1;
  const sources = new Map<number, Float64Array>();
  for (const rank of sourceMap.ranks.keys()) sources.set(rank, extract(sourceMap, full, rank));
  const got = executeSegments(entry as { target_map: unknown; segments: unknown[] }, sources);
  for (const rank of targetMap.ranks.keys()) {
    const want = extract(targetMap, full, rank);
    const have = got.get(rank)!;
    for (let a = 0; a < want.length; a++) {
      if (want[a] !== have[a]) {
        reject(
          `${at}: executing the plan leaves target location ${rank} address ${a} = ` +
            `${have[a] === 0 ? "unwritten" : `element ${have[a] - 1}`}, extract() gives element ` +
            `${want[a] - 1}`,
        );
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Entry point

function summarize(acc: Accounting, parameters: number): PlanStats {
  const send = Object.fromEntries([...acc.send].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  const receive = Object.fromEntries([...acc.receive].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  const sendValues = Object.values(send), receiveValues = Object.values(receive);
  const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : 0);
  return {
    parameters,
    segments: acc.segments,
    movedElements: acc.moved,
    movedBytes: acc.movedBytes,
    localBytes: acc.local,
    remoteBytes: acc.movedBytes - acc.local,
    sendBytesByProcess: send,
    receiveBytesByProcess: receive,
    maxProcessSendBytes: Math.max(0, ...sendValues),
    meanProcessSendBytes: mean(sendValues),
    maxProcessReceiveBytes: Math.max(0, ...receiveValues),
    meanProcessReceiveBytes: mean(receiveValues),
    processesMapped: acc.sourceProcesses !== null && acc.targetProcesses !== null,
  };
}

function checkEnvelope(plan: unknown): asserts plan is PlanFile {
  if (!isRecord(plan)) reject("plan: expected a JSON object");
  if (plan.schema_version !== 1) {
    reject(`schema_version: expected 1, got ${JSON.stringify(plan.schema_version)}`);
  }
  if (typeof plan.policy !== "string") reject("policy: expected a string");
  for (const field of ["source_processes", "target_processes"]) {
    const m = plan[field];
    if (!isRecord(m)) reject(`${field}: expected an object keyed by location`);
    for (const [k, v] of Object.entries(m)) {
      if (!/^(0|[1-9][0-9]*)$/.test(k)) {
        reject(`${field}: key ${JSON.stringify(k)} is not a location`);
      }
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
        reject(`${field}.${k}: expected a non-negative integer process`);
      }
    }
  }
  if (!isRecord(plan.parameters)) reject("parameters: expected an object keyed by parameter name");
}

/**
 * Verifies a plan file (parsed JSON, any producer, DeepSpeed segments without `logical_origin`
 * included): every target element written exactly once, each from a location that holds it,
 * every address in bounds; with `execute`, also runs the plan on synthetic data and compares
 * each target shard with `extract`. Never throws on a bad plan: the verdict names the first
 * problem as `parameters.<name>.segments[<i>]: ...` (or the map/field at fault).
 */
export function verifyPlan(plan: unknown, options: VerifyPlanOptions = {}): PlanVerdict {
  try {
    checkEnvelope(plan);
    const acc: Accounting = {
      sourceProcesses: processesOf(plan.source_processes),
      targetProcesses: processesOf(plan.target_processes),
      send: new Map(),
      receive: new Map(),
      moved: 0,
      movedBytes: 0,
      local: 0,
      segments: 0,
    };
    const names = Object.keys(plan.parameters).sort();
    for (const name of names) {
      const entry = plan.parameters[name] as unknown;
      if (!isRecord(entry)) reject(`parameters.${name}: expected an object`);
      verifyParameter(name, entry, acc);
    }
    if (options.execute) {
      const limit = options.maxExecuteElements ?? 1 << 26;
      for (const name of names) {
        executeAndCompare(name, plan.parameters[name] as unknown as Record<string, unknown>, limit);
      }
    }
    return {
      ok: true,
      error: null,
      stats: summarize(acc, names.length),
      executed: !!options.execute,
    };
  } catch (e) {
    if (e instanceof Rejection) {
      return { ok: false, error: e.message, stats: null, executed: false };
    }
    throw e;
  }
}
