/**
 * One viem client per RPC URL for the process: the API, the jobs and the CLIs share them. They
 * reach the node over node:http with kept connections (`rpcFetch`), not `fetch`.
 */
import { createPublicClient, http, type PublicClient } from "viem";
import { rpcFetch } from "./rpc-fetch.js";

const clients = new Map<string, PublicClient>();

export function rpcClient(url: string): PublicClient {
  let c = clients.get(url);
  if (!c) {
    c = createPublicClient({ transport: http(url, { timeout: 15_000, retryCount: 2, fetchFn: rpcFetch as never }) });
    clients.set(url, c);
  }
  return c;
}
