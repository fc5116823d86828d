/**
 * The one number and duration format of the console, reports, JUnit and chart labels.
 *
 * @module
 */

export {
  BYTE_UNITS,
  bytes,
  comparisonUlp,
  comparisonUlpText,
  count,
  duration,
  exact,
  percent,
  stat,
  STAT_DIGITS,
  ulps,
} from "./numbers.ts";
