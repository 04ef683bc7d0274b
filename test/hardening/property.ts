// fast-check's assert puts the property's own error in `cause`, which node:test does not print: this
// runs the property and fails with that error's message, the seed and a short counterexample.
import fc from 'fast-check';

export async function checkProperty<T>(property: fc.IAsyncProperty<T>, numRuns: number): Promise<void> {
  // No shrinking: each run talks to a live process, and the failing batch is already small.
  const details = await fc.check(property, { numRuns, endOnFailure: true });
  if (!details.failed) return;
  const error = details.errorInstance;
  const message = error instanceof Error ? error.message : String(error);
  const example = fc.stringify(details.counterexample).slice(0, 1500);
  throw new Error(`property failed after ${details.numRuns} run(s) (seed ${details.seed}, path ${details.counterexamplePath}):\n${message}\ncounterexample: ${example}`);
}
