/** Seeded pseudo-random numbers (mulberry32) so a simulation is reproducible from its seed. */
import { type Address, getAddress, keccak256, toHex } from "viem";

export class Rng {
  private state: number;
  constructor(seed: string | number) {
    const h = keccak256(toHex(String(seed)));
    this.state = Number.parseInt(h.slice(2, 10), 16) >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, maxInclusive: number): number {
    return min + Math.floor(this.next() * (maxInclusive - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** Normal-ish deviate (sum of uniforms). */
  gauss(): number {
    let s = 0;
    for (let i = 0; i < 6; i++) s += this.next();
    return s - 3;
  }
}

/** A stable address for a named actor of a seeded simulation. */
export function actorAddress(seed: string, role: string, index = 0): Address {
  return getAddress(`0x${keccak256(toHex(`${seed}:${role}:${index}`)).slice(26)}`);
}

/** A stable private key for an actor that must sign (multisig owners). */
export function actorKey(seed: string, role: string, index = 0): `0x${string}` {
  return keccak256(toHex(`key:${seed}:${role}:${index}`));
}
