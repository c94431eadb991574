import type { Surfaces } from "../index.js";

export function registerPoints(_s: Surfaces): void {}
