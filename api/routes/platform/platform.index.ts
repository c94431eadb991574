import type { Surfaces } from "../index.js";

export function registerPlatform(_s: Surfaces): void {}
