/**
 * The comparison lanes and what they measure with: exact bits and ULPs, tolerance, drift (early,
 * envelope, bias), the noise floor, rounding, and the sensitivity of a resume.
 *
 * @module
 */

export { firstAtLeast } from "./_sorted.ts";
export {
  compareDrift,
  driftFailureText,
  type DriftOptions,
  medianStepChange,
  MIN_BLOCK_STEPS,
  ulp32,
} from "./drift.ts";
export {
  compareLane,
  type Lane,
  type LaneOptions,
  type LaneResult,
  rangeWindow,
  type StepRange,
  unionWindow,
} from "./lanes.ts";
export {
  deriveNoiseRtol,
  measureNoiseFloor,
  type NoiseFloorResult,
  type NoiseRtol,
  type RepeatEvidence,
  SPREAD_LIMIT,
} from "./noise_floor.ts";
export {
  isShortDecimal,
  looksRounded,
  MAX_DECIMALS,
  MAX_SIGNIFICANT,
  MIN_VALUES,
  roundedSides,
  roundingBound,
} from "./rounded.ts";
export { type SensitivityContext, withSensitivity } from "./sensitivity.ts";
export {
  isFloat32,
  ulpDistance32,
  ulpDistance64,
  ulpDistanceIn,
  type UlpUnit,
  ulpUnitOf,
} from "./ulp.ts";
