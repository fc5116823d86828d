/**
 * State checks: the save, restore, convert and perturbation checks over digests, the gradient
 * buffers of the first resumed step, unrequested checkpoint tags, plan executions on the
 * checkpoint's bytes, and components named in the framework's words.
 *
 * @module
 */

export { unrequestedTags } from "./checkpoint_tags.ts";
export {
  componentLabel,
  componentList,
  frameworkOf,
  masterNotRestored,
} from "./component_words.ts";
export { GRAD_BUFFERS, withGradBuffers } from "./grad_carryover.ts";
export {
  comparePlanExecution,
  planExecutionChecks,
  type PlanExecutionFacts,
  type ProcessStateDocument,
} from "./plan_execution.ts";
export {
  checkConvertedFiles,
  checkRestoredState,
  checkSavedState,
  checkSavePerturbation,
  findDigestEvent,
  loadedSaveText,
  stateCheckName,
  tensorList,
} from "./state_checks.ts";
