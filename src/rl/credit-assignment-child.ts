/**
 * Child process of `runCreditAssignment` (credit-assignment.ts): trains one estimator with a fresh
 * wasm heap, writes its curve file and sends each step's progress to the parent. Not an entry
 * point for people: argv[2] is `{ options, estimator }` as JSON.
 */
import {
  type CreditAssignmentChildMessage,
  type CreditAssignmentChildOptions,
  trainCreditAssignmentEstimator,
} from "./credit-assignment.ts";

const { options, estimator } = JSON.parse(process.argv[2]) as {
  options: CreditAssignmentChildOptions;
  estimator: string;
};
await trainCreditAssignmentEstimator(
  {
    ...options,
    onProgress: (name, progress) =>
      process.send?.({ estimator: name, progress } satisfies CreditAssignmentChildMessage),
  },
  estimator,
);
process.disconnect?.();
