/**
 * The message a wallet signs to register for points (POST /api/v1/platform/points/register):
 * EIP-712 typed data, verified with viem, so EOAs and smart-contract wallets (EIP-1271, and
 * ERC-6492 for wallets not deployed yet) both work.
 *
 *   domain  { name: "Vault Yield Points", version: "1", chainId: <chain_id> }
 *   Register(address user, address referrer, string nonce, uint256 expiry)
 *
 * `referrer` is the zero address when there is none; `expiry` is a unix time in seconds after
 * which the signature is refused; `nonce` (8 to 128 characters) is spent by a successful
 * registration and refused ever after.
 */
import { createPublicClient, type Hex, http, recoverTypedDataAddress, zeroAddress } from "viem";
import { rpcFetch } from "../../onchain/rpc-fetch.js";

export const REGISTER_DOMAIN_NAME = "Vault Yield Points";
export const REGISTER_DOMAIN_VERSION = "1";

export const registerTypes = {
  Register: [
    { name: "user", type: "address" },
    { name: "referrer", type: "address" },
    { name: "nonce", type: "string" },
    { name: "expiry", type: "uint256" },
  ],
} as const;

export interface RegisterMessage {
  user: `0x${string}`;
  referrer: `0x${string}` | null;
  chainId: number;
  nonce: string;
  expiry: number | bigint;
}

/** The typed data to sign (viem's signTypedData takes it as is). */
export function registerTypedData(m: RegisterMessage) {
  return {
    domain: { name: REGISTER_DOMAIN_NAME, version: REGISTER_DOMAIN_VERSION, chainId: m.chainId },
    types: registerTypes,
    primaryType: "Register" as const,
    message: { user: m.user, referrer: m.referrer ?? zeroAddress, nonce: m.nonce, expiry: BigInt(m.expiry) },
  };
}

const ERC6492_SUFFIX = "6492".repeat(16);

export type Verdict = "valid" | "invalid" | "unverifiable";

/**
 * An EOA's signature is checked locally (ecrecover). Anything else is checked on the chain of
 * `chainId` (EIP-1271 / ERC-6492 through viem), when this process has an RPC for it:
 * "unverifiable" when it has none or the RPC fails.
 */
export async function verifyRegistration(
  m: RegisterMessage,
  signature: Hex,
  rpcUrl: string | undefined,
): Promise<Verdict> {
  const data = registerTypedData(m);
  try {
    const signer = await recoverTypedDataAddress({ ...data, signature });
    if (signer.toLowerCase() === m.user.toLowerCase()) return "valid";
  } catch {
    // not a 65-byte ECDSA signature: maybe a contract wallet's
  }
  if (!rpcUrl) return "unverifiable";
  const transport = http(rpcUrl, { timeout: 3000, retryCount: 1, fetchFn: rpcFetch as never });
  const client = createPublicClient({ transport });
  try {
    // The code lookup also tells an RPC that is down (unverifiable) from a wrong signature.
    const code = await client.getCode({ address: m.user });
    // no code: an EOA whose signature did not recover, unless it is a counterfactual wallet's (ERC-6492)
    if (!code && !signature.toLowerCase().endsWith(ERC6492_SUFFIX)) return "invalid";
    return (await client.verifyTypedData({ address: m.user, ...data, signature })) ? "valid" : "invalid";
  } catch {
    return "unverifiable";
  }
}
