import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Files run in name order: the end-to-end files share one devnet, and later ones change it. */
export default class ByNameSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return [...files].sort((a, b) => a.moduleId.localeCompare(b.moduleId));
  }
}
