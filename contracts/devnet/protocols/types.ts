/** Inputs the protocol deployments take from the devnet that calls them. */
import type { Address } from "viem";

/** A token of the devnet (our MockERC20: freely mintable) and its USD feed (our PriceFeed, 8 decimals). */
export interface TokenInput {
  address: Address;
  symbol: string;
  decimals: number;
  feed: Address;
}
