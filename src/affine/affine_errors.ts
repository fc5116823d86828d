/**
 * Error classes of the affine layer, mirroring DeepSpeed's `affine_transfer.py`:
 * a map that contradicts itself is never silently handled by a fallback. `AffineError` is the one
 * base of this layer: `src/affine` imports nothing (the trainer uses it too), so it does not
 * extend the harness's `HarnessError`; an affine error reaching the harness command line is ERROR.
 *
 * @module
 */

/** Base class: an affine map, plan or policy answer that must not reach a transport. */
export class AffineError extends Error {
  /** Creates the error with a message that names the offending object. */
  constructor(message: string) {
    super(message);
    this.name = "AffineError";
  }
}

/** The map contradicts itself or the other map (corrupt checkpoint metadata). */
export class InvalidMapError extends AffineError {
  /** Creates the error with a message that names the offending map field. */
  constructor(message: string) {
    super(message);
    this.name = "InvalidMapError";
  }
}

/**
 * Replicas of one logical element hold different data (`rebuild`): the shards disagree, which a
 * caller may want to tell apart from a map that contradicts itself.
 */
export class ReplicaConflictError extends InvalidMapError {
  /** Creates the error with a message that names the element and the two values. */
  constructor(message: string) {
    super(message);
    this.name = "ReplicaConflictError";
  }
}

/** Legitimate geometry the planner does not express (scaled pieces, permuted strides). */
export class UnsupportedLayoutError extends AffineError {
  /** Creates the error with a message that names the unsupported layout. */
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedLayoutError";
  }
}

/** A replica policy answered with something the planner refuses. */
export class InvalidReplicaPolicyError extends AffineError {
  /** Creates the error with a message that names the request and the answer. */
  constructor(message: string) {
    super(message);
    this.name = "InvalidReplicaPolicyError";
  }
}

/** A planning limit of `PlanBudget` was exhausted: the plan is refused, never truncated. */
export class PlanBudgetError extends AffineError {
  /** Creates the error with a message that names the exhausted limit. */
  constructor(message: string) {
    super(message);
    this.name = "PlanBudgetError";
  }
}
