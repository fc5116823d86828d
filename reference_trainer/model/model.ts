/**
 * The tiny mixture-of-experts language model: token embedding with dropout, one MoE block
 * (router + E SwiGLU experts named as AutoEP names them: `w1` gate, `w2` down, `w3` up; top-k
 * routing with softmax over the chosen logits; residual), an output head and cross-entropy.
 * Forward and backward are hand-written loops over Float32Array buffers, so every stored value
 * is rounded to float32 and results are deterministic.
 *
 * @module
 */

import type { ModelConfig } from "./config.ts";
import { normal4, Purpose, uniform5 } from "./rng.ts";

/** How a parameter is laid out over EP ranks. */
export type ParamKind = "dense" | "expert" | "column";

/** One trainable parameter. */
export interface ParamSpec {
  /** DeepSpeed-style parameter name. */
  name: string;
  /** Logical shape. */
  shape: number[];
  /**
   * `dense`: replicated on every EP rank; `expert`: `[E, ...]` placed by the AutoEP descriptor;
   * `column`: split by columns (vocabulary) over the EP ranks.
   */
  kind: ParamKind;
}

/** Parameter names, fixed. */
export const PARAM = {
  embed: "embed.weight",
  router: "layers.0.router.weight",
  w1: "layers.0.experts.w1",
  w2: "layers.0.experts.w2",
  w3: "layers.0.experts.w3",
  head: "head.weight",
} as const;

/** The model's parameters in their fixed order. */
export function paramSpecs(m: ModelConfig): ParamSpec[] {
  const { vocab: V, dModel: d, dFF: f, numExperts: E } = m;
  return [
    { name: PARAM.embed, shape: [V, d], kind: "dense" },
    { name: PARAM.router, shape: [d, E], kind: "dense" },
    { name: PARAM.w1, shape: [E, d, f], kind: "expert" },
    { name: PARAM.w2, shape: [E, f, d], kind: "expert" },
    { name: PARAM.w3, shape: [E, d, f], kind: "expert" },
    { name: PARAM.head, shape: [d, V], kind: "column" },
  ];
}

/** Initial logical fp32 values of every parameter (independent of topology). */
export function initParams(seed: number, m: ModelConfig): Map<string, Float32Array> {
  const scales: Record<string, number> = {
    [PARAM.embed]: 1.0,
    [PARAM.router]: 0.5,
    [PARAM.w1]: 1 / Math.sqrt(m.dModel),
    [PARAM.w2]: 1 / Math.sqrt(m.dFF),
    [PARAM.w3]: 1 / Math.sqrt(m.dModel),
    [PARAM.head]: 1 / Math.sqrt(m.dModel),
  };
  const out = new Map<string, Float32Array>();
  paramSpecs(m).forEach((spec, index) => {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = normal4(seed, Purpose.init, index, i) * scales[spec.name];
    out.set(spec.name, a);
  });
  return out;
}

/** Module weights as one forward pass sees them: per EP rank shards plus the routing tables. */
export interface ComputeWeights {
  /** `[V, d]` per EP rank. */
  embed: Float32Array[];
  /** `[d, E]` per EP rank. */
  router: Float32Array[];
  /** `[n_local, d, f]` per EP rank. */
  w1: Float32Array[];
  /** `[n_local, f, d]` per EP rank. */
  w2: Float32Array[];
  /** `[n_local, d, f]` per EP rank. */
  w3: Float32Array[];
  /** Full logical `[d, V]` head, assembled from the column shards. */
  head: Float32Array;
  /** `slots[p][e]`: local slot of expert e on EP rank p, or -1. */
  slots: Int32Array[];
  /** `holders[e]`: EP ranks holding expert e, ascending. */
  holders: number[][];
}

/** Logical fp32 gradient buffers of one data-parallel rank. */
export interface Grads {
  /** `[V, d]`. */
  embed: Float32Array;
  /** `[d, E]`. */
  router: Float32Array;
  /** `[E, d, f]`. */
  w1: Float32Array;
  /** `[E, f, d]`. */
  w2: Float32Array;
  /** `[E, d, f]`. */
  w3: Float32Array;
  /** `[d, V]`. */
  head: Float32Array;
}

/** Zeroed gradient buffers. */
export function zeroGrads(m: ModelConfig): Grads {
  const { vocab: V, dModel: d, dFF: f, numExperts: E } = m;
  return {
    embed: new Float32Array(V * d),
    router: new Float32Array(d * E),
    w1: new Float32Array(E * d * f),
    w2: new Float32Array(E * f * d),
    w3: new Float32Array(E * d * f),
    head: new Float32Array(d * V),
  };
}

/** The gradient buffer of a parameter name. */
export function gradOf(g: Grads, name: string): Float32Array {
  switch (name) {
    case PARAM.embed:
      return g.embed;
    case PARAM.router:
      return g.router;
    case PARAM.w1:
      return g.w1;
    case PARAM.w2:
      return g.w2;
    case PARAM.w3:
      return g.w3;
    case PARAM.head:
      return g.head;
  }
  throw new Error(`unknown parameter ${name}`);
}

/** Key of the dropout masks of one micro-batch. */
export interface DropoutKey {
  /** RNG seed. */
  seed: number;
  /** RNG counter of this micro-batch. */
  offset: number;
}

/**
 * Forward and backward of one sequence. Scratch buffers are allocated once; `sequence()`
 * accumulates gradients (scaled by `gradScale`) into `g` and returns the float32 sum of the
 * sequence's token losses.
 */
export class Kernel {
  readonly #m: ModelConfig;
  readonly #x: Float32Array;
  readonly #mask: Float32Array;
  readonly #logitsR: Float32Array;
  readonly #u: Float32Array[];
  readonly #v: Float32Array[];
  readonly #h: Float32Array[];
  readonly #y: Float32Array[];
  readonly #z: Float32Array;
  readonly #logits: Float32Array;
  readonly #dlog: Float32Array;
  readonly #dz: Float32Array;
  readonly #dx: Float32Array;
  readonly #dh: Float32Array;
  readonly #du: Float32Array;
  readonly #dv: Float32Array;
  readonly #dy: Float32Array;

  /** Allocates scratch space for a model shape. */
  constructor(m: ModelConfig) {
    this.#m = m;
    const { vocab: V, dModel: d, dFF: f, numExperts: E, topK: K } = m;
    this.#x = new Float32Array(d);
    this.#mask = new Float32Array(d);
    this.#logitsR = new Float32Array(E);
    this.#u = Array.from({ length: K }, () => new Float32Array(f));
    this.#v = Array.from({ length: K }, () => new Float32Array(f));
    this.#h = Array.from({ length: K }, () => new Float32Array(f));
    this.#y = Array.from({ length: K }, () => new Float32Array(d));
    this.#z = new Float32Array(d);
    this.#logits = new Float32Array(V);
    this.#dlog = new Float32Array(V);
    this.#dz = new Float32Array(d);
    this.#dx = new Float32Array(d);
    this.#dh = new Float32Array(f);
    this.#du = new Float32Array(f);
    this.#dv = new Float32Array(f);
    this.#dy = new Float32Array(d);
  }

  /**
   * Runs one sequence (`tokens[at .. at+seqLen]`) on a data-parallel rank whose EP rank is
   * `epRank`. `slot` is the sample's index in the global micro-batch: with the dropout key it
   * fixes the masks, and with the token position it picks the holder of a replicated expert
   * this rank does not hold itself.
   */
  sequence(
    w: ComputeWeights,
    epRank: number,
    g: Grads,
    tokens: Int32Array,
    at: number,
    drop: DropoutKey,
    slot: number,
    gradScale: number,
  ): number {
    const m = this.#m;
    const V = m.vocab, d = m.dModel, f = m.dFF, E = m.numExperts, K = m.topK, T = m.seqLen;
    const keep = 1 - m.dropout, keepScale = Math.fround(1 / keep);
    const embed = w.embed[epRank], router = w.router[epRank], head = w.head;
    const x = this.#x, mask = this.#mask, lr = this.#logitsR, z = this.#z;
    const logits = this.#logits, dlog = this.#dlog, dz = this.#dz, dx = this.#dx;
    const dh = this.#dh, du = this.#du, dv = this.#dv, dy = this.#dy;
    const gw1 = g.w1, gw2 = g.w2, gw3 = g.w3, gRouter = g.router, gEmbed = g.embed;
    const chosen = new Int32Array(K), holderOf = new Int32Array(K), base1 = new Int32Array(K);
    const gate = new Float64Array(K), dgate = new Float64Array(K);
    const mySlots = w.slots[epRank];
    let lossSum = 0;
    for (let t = 0; t < T; t++) {
      const tok = tokens[at + t], target = tokens[at + t + 1];
      const tokenKey = slot * T + t;
      // Embedding with dropout keyed by (seed, counter, token of the global micro-batch, unit).
      for (let i = 0; i < d; i++) {
        const kept = uniform5(drop.seed, Purpose.dropout, drop.offset, tokenKey, i) < keep;
        mask[i] = kept ? keepScale : 0;
        x[i] = embed[tok * d + i] * mask[i];
      }
      // Router and top-k (ties go to the lower expert id).
      for (let e = 0; e < E; e++) {
        let s = 0;
        for (let i = 0; i < d; i++) s += x[i] * router[i * E + e];
        lr[e] = s;
      }
      for (let k = 0; k < K; k++) {
        let best = -1;
        for (let e = 0; e < E; e++) {
          let taken = false;
          for (let j = 0; j < k; j++) if (chosen[j] === e) taken = true;
          if (!taken && (best < 0 || lr[e] > lr[best])) best = e;
        }
        chosen[k] = best;
      }
      let gmax = -Infinity;
      for (let k = 0; k < K; k++) gmax = Math.max(gmax, lr[chosen[k]]);
      let gsum = 0;
      for (let k = 0; k < K; k++) {
        gate[k] = Math.exp(lr[chosen[k]] - gmax);
        gsum += gate[k];
      }
      for (let k = 0; k < K; k++) gate[k] = Math.fround(gate[k] / gsum);
      // Experts: each token goes to one holder (local when this rank holds the expert).
      for (let i = 0; i < d; i++) z[i] = x[i];
      for (let k = 0; k < K; k++) {
        const e = chosen[k];
        let h = epRank, slotIdx = mySlots[e];
        if (slotIdx < 0) {
          const hs = w.holders[e];
          h = hs[tokenKey % hs.length];
          slotIdx = w.slots[h][e];
        }
        holderOf[k] = h;
        base1[k] = slotIdx * d * f;
        const W1 = w.w1[h], W2 = w.w2[h], W3 = w.w3[h], b = base1[k];
        const u = this.#u[k], v = this.#v[k], hh = this.#h[k], y = this.#y[k];
        for (let j = 0; j < f; j++) {
          let su = 0, sv = 0;
          for (let i = 0; i < d; i++) {
            su += x[i] * W1[b + i * f + j];
            sv += x[i] * W3[b + i * f + j];
          }
          u[j] = su;
          v[j] = sv;
          const sig = 1 / (1 + Math.exp(-u[j]));
          hh[j] = u[j] * sig * v[j];
        }
        for (let i = 0; i < d; i++) {
          let s = 0;
          for (let j = 0; j < f; j++) s += hh[j] * W2[b + j * d + i];
          y[i] = s;
        }
        for (let i = 0; i < d; i++) z[i] += gate[k] * y[i];
      }
      // Head and cross-entropy.
      let lmax = -Infinity;
      for (let c = 0; c < V; c++) {
        let s = 0;
        for (let i = 0; i < d; i++) s += z[i] * head[i * V + c];
        logits[c] = s;
        if (logits[c] > lmax) lmax = logits[c];
      }
      let sumExp = 0;
      for (let c = 0; c < V; c++) sumExp += Math.exp(logits[c] - lmax);
      const logZ = Math.log(sumExp) + lmax;
      lossSum = Math.fround(lossSum + Math.fround(logZ - logits[target]));
      for (let c = 0; c < V; c++) {
        const p = Math.exp(logits[c] - logZ);
        dlog[c] = (p - (c === target ? 1 : 0)) * gradScale;
      }
      // Backward: head.
      const gh = g.head;
      for (let i = 0; i < d; i++) {
        let s = 0;
        const zi = z[i];
        for (let c = 0; c < V; c++) {
          gh[i * V + c] += zi * dlog[c];
          s += head[i * V + c] * dlog[c];
        }
        dz[i] = s;
        dx[i] = s;
      }
      // Backward: experts and gates.
      for (let k = 0; k < K; k++) {
        const e = chosen[k], h = holderOf[k], b = base1[k], ge = e * d * f;
        const W1 = w.w1[h], W2 = w.w2[h], W3 = w.w3[h];
        const u = this.#u[k], v = this.#v[k], hh = this.#h[k], y = this.#y[k];
        let dg = 0;
        for (let i = 0; i < d; i++) {
          dg += y[i] * dz[i];
          dy[i] = gate[k] * dz[i];
        }
        dgate[k] = dg;
        for (let j = 0; j < f; j++) {
          let s = 0;
          const hj = hh[j];
          for (let i = 0; i < d; i++) {
            gw2[ge + j * d + i] += hj * dy[i];
            s += W2[b + j * d + i] * dy[i];
          }
          dh[j] = s;
          const sig = 1 / (1 + Math.exp(-u[j]));
          const act = u[j] * sig;
          dv[j] = dh[j] * act;
          du[j] = dh[j] * v[j] * (sig + u[j] * sig * (1 - sig));
        }
        for (let i = 0; i < d; i++) {
          const xi = x[i];
          let s = 0;
          for (let j = 0; j < f; j++) {
            gw1[ge + i * f + j] += xi * du[j];
            gw3[ge + i * f + j] += xi * dv[j];
            s += W1[b + i * f + j] * du[j] + W3[b + i * f + j] * dv[j];
          }
          dx[i] += s;
        }
      }
      // Backward: router (softmax over the chosen logits).
      let mean = 0;
      for (let k = 0; k < K; k++) mean += gate[k] * dgate[k];
      for (let k = 0; k < K; k++) {
        const e = chosen[k];
        const dl = Math.fround(gate[k] * (dgate[k] - mean));
        for (let i = 0; i < d; i++) {
          gRouter[i * E + e] += x[i] * dl;
          dx[i] += router[i * E + e] * dl;
        }
      }
      // Backward: dropout and embedding row.
      for (let i = 0; i < d; i++) gEmbed[tok * d + i] += dx[i] * mask[i];
    }
    return lossSum;
  }
}
