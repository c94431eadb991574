import type { Surfaces } from "../index.js";

export function registerVaults(_s: Surfaces): void {}
