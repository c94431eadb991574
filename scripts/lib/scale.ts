/**
 * Pure helpers of `npm run bench:scale` (scripts/bench-scale.ts): the size argument, which
 * simulated chains carry the vaults, and the straight-line fit of a measure against vault-days.
 */

/** A benchmark size: vaults on the simulated chains, days of simulated history. */
export interface ScaleSize {
  vaults: number;
  days: number;
}

/** Vaults per simulated chain: the demo's pair (a lendingPool and a tokenizedVaultV2). */
export const VAULTS_PER_CHAIN = 2;
/**
 * Chain ids the simulated chains take, in order: catalogue EVM chains (config/chains.ts), so the
 * indexer accepts them. Even positions carry chain 1's vault pair, odd ones Base's.
 */
export const SCALE_CHAIN_IDS = [1, 8453, 10, 42161, 137, 56, 43114, 59144] as const;
export const MAX_VAULTS = SCALE_CHAIN_IDS.length * VAULTS_PER_CHAIN;
/** The simulator's shortest useful history (its calendar has deposits, reports and redemptions). */
export const MIN_DAYS = 7;
export const MAX_DAYS = 365;

/**
 * Parses `<vaults>x<days>`, e.g. `8x60`. Returns the size or a sentence saying what is wrong.
 */
export function parseSize(text: string): ScaleSize | string {
  const m = /^(\d+)x(\d+)$/.exec(text.trim());
  if (!m) return `"${text}" is not a size: write <vaults>x<days>, e.g. 8x60`;
  const vaults = Number(m[1]);
  const days = Number(m[2]);
  if (vaults < VAULTS_PER_CHAIN || vaults > MAX_VAULTS || vaults % VAULTS_PER_CHAIN !== 0)
    return (
      `"${text}": vaults must be an even number from ${VAULTS_PER_CHAIN} to ${MAX_VAULTS} (${VAULTS_PER_CHAIN} per ` +
      `simulated chain)`
    );
  if (days < MIN_DAYS || days > MAX_DAYS) return `"${text}": days must be from ${MIN_DAYS} to ${MAX_DAYS}`;
  return { vaults, days };
}

/** The simulated chains of a size: their ids and which devnet chain's vault pair each carries. */
export function chainsFor(size: ScaleSize): { chainId: number; template: 1 | 8453 }[] {
  const n = size.vaults / VAULTS_PER_CHAIN;
  return SCALE_CHAIN_IDS.slice(0, n).map((chainId, i) => ({ chainId, template: i % 2 === 0 ? 1 : 8453 }));
}

/** Least-squares line y = fixed + perUnit * x, and how well it fits (r², 1 when exact). */
export interface LinearFit {
  fixed: number;
  perUnit: number;
  r2: number;
}

/** The fit of y against x over at least two points with at least two distinct x; null otherwise. */
export function linearFit(points: readonly { x: number; y: number }[]): LinearFit | null {
  const n = points.length;
  if (n < 2) return null;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (const p of points) {
    sxx += (p.x - mx) ** 2;
    sxy += (p.x - mx) * (p.y - my);
    syy += (p.y - my) ** 2;
  }
  if (sxx === 0) return null;
  const perUnit = sxy / sxx;
  const fixed = my - perUnit * mx;
  const r2 = syy === 0 ? 1 : (sxy * sxy) / (sxx * syy);
  return { fixed, perUnit, r2 };
}

/** Least-squares plane y = fixed + perChain * chains + perVaultDay * vaultDays. */
export interface ChainVaultDayFit {
  fixed: number;
  perChain: number;
  perVaultDay: number;
  /** how many points the fit is over, and whether it is exact (3 points: no residual to judge it by) */
  points: number;
}

/**
 * The fit of y against chains and vault-days: what each simulated chain costs once (deployment,
 * its protocol world) apart from what each vault-day adds. Needs at least three points that do
 * not lie on one line in (chains, vault-days); null otherwise.
 */
export function chainVaultDayFit(
  points: readonly { chains: number; vaultDays: number; y: number }[],
): ChainVaultDayFit | null {
  if (points.length < 3) return null;
  // normal equations A^T A b = A^T y, A's rows [1, chains, vaultDays]
  const m = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  const v = [0, 0, 0];
  for (const p of points) {
    const row = [1, p.chains, p.vaultDays];
    for (let i = 0; i < 3; i++) {
      v[i]! += row[i]! * p.y;
      for (let j = 0; j < 3; j++) m[i]![j]! += row[i]! * row[j]!;
    }
  }
  const b = solve3(m, v);
  if (!b) return null;
  return { fixed: b[0]!, perChain: b[1]!, perVaultDay: b[2]!, points: points.length };
}

/** Solves a 3x3 system by Gaussian elimination with partial pivoting; null when singular. */
function solve3(a: number[][], y: number[]): number[] | null {
  const m = a.map((row, i) => [...row, y[i]!]);
  for (let c = 0; c < 3; c++) {
    let pivot = c;
    for (let r = c + 1; r < 3; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r;
    const scale = Math.max(...m.map((row) => Math.abs(row[c]!)), 1);
    if (Math.abs(m[pivot]![c]!) < 1e-9 * scale) return null;
    [m[c], m[pivot]] = [m[pivot]!, m[c]!];
    for (let r = 0; r < 3; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / m[c]![c]!;
      for (let k = c; k < 4; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row, i) => row[3]! / row[i]!);
}

/** Bytes as a short figure: 812 B, 3.4 KiB, 12.0 MiB, 1.25 GiB. */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${units[u]}`;
}
