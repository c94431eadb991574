import type { Surfaces } from "../index.js";

export function registerGovernance(_s: Surfaces): void {}
