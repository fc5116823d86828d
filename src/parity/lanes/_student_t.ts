// Student's t distribution for the drift lane's bias test: the two-sided tail probability of a
// t statistic and its inverse, so a test on fewer blocks keeps the false-alarm rate of the
// configured limit (docs/parity.md, "The drift lane").

/** P(|T| > t) for Student's t with `df` degrees of freedom. */
export function twoSidedTail(t: number, df: number): number {
  if (!Number.isFinite(t)) return 0;
  const x = df / (df + t * t);
  return _incompleteBeta(x, df / 2, 0.5);
}

/** The t whose two-sided tail probability is `p` at `df` degrees of freedom (bisection). */
export function twoSidedQuantile(p: number, df: number): number {
  let lo = 0;
  let hi = 1;
  while (twoSidedTail(hi, df) > p) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (twoSidedTail(mid, df) > p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The regularized incomplete beta function I_x(a, b). */
function _incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(
    _logGamma(a + b) - _logGamma(a) - _logGamma(b) + a * Math.log(x) + b * Math.log(1 - x),
  );
  // The continued fraction converges fast on this side; the other side by symmetry.
  return x < (a + 1) / (a + b + 2)
    ? (front * _betaFraction(x, a, b)) / a
    : 1 - (front * _betaFraction(1 - x, b, a)) / b;
}

/** Continued fraction of the incomplete beta function (modified Lentz). */
function _betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return h;
}

/** log Γ(z) for z > 0 (Lanczos, g = 7). */
function _logGamma(z: number): number {
  const g = [
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
  ];
  if (z < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * z)) - _logGamma(1 - z);
  const x = z - 1;
  let sum = g[0];
  for (let i = 1; i < 9; i++) sum += g[i] / (x + i);
  const t = x + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(sum);
}
