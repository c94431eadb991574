/** Route definitions of the vault resource, public (/v1) and institutional (/api/v1). */
import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema } from "../../lib/errors.js";
import {
  errorResponses,
  jsonResponse,
  openReadAuthResponses,
  openReadSecurity,
  vaultJsonResponse,
} from "../../lib/router.js";
import { openRoute, readKey } from "../../middleware/auth.js";
import {
  AnnualizedApySchema,
  ChainOnlyQuery,
  PortfolioDataSchema,
  PublicVaultListQuery,
  TimeseriesQuery,
  TimeseriesSchema,
  TokenizedVaultPublicSchema,
  TokenizedVaultSchema,
  UnsupportedKindSchema,
  VaultListQuery,
  VaultPathParams,
  VaultReadQuery,
  VaultSummarySchema,
} from "./tokenized_vault.schemas.js";

const inst = { middleware: [readKey], security: openReadSecurity };
const TAGS = ["vaults"];

const LIST_DESCRIPTION =
  "Every vault of the registry, EVM and non-EVM, ordered by chain id then address. Non-EVM vaults carry registry " +
  "data only (no indexed figures).";
const READ_DESCRIPTION =
  "One vault by address: EVM addresses match case-insensitively, other chains' addresses exactly. When the address " +
  "exists on several chains, `chain` selects one (default: the lowest chain id). Unknown address: 404.";
const APY_DESCRIPTION =
  "Annualized APY of a vault of one of the four supported kinds (`stablecoin`, `tokenized_eth`, " +
  "`wrapped_staked_eth`, `restaked_eth`): liquid APY over 7 and 30 days (`liquidAPY7Day`, `liquidAPY30Day`, and " +
  "the deprecated `liquid_apy_7_day`, `liquid_apy_30_day` with the same values), simple and compound historical " +
  "APY and gross APY per horizon. " +
  "A known vault of another kind (e.g. a non-EVM vault) answers 404 with `detail`, its `kind` and the " +
  "`supported_kinds`; an unknown address answers 404 with `detail`. A supported vault whose figures are not " +
  "computed yet answers 200 with nulls and empty maps.";

// (the router's shared `notFoundResponse` is declared `as const`, whose readonly content the
// handler typing does not see; this one is the same response, typed mutable)
const notFoundResponse = { 404: jsonResponse("Unknown vault", ErrorSchema) };
const apy404 = {
  404: jsonResponse(
    "Unknown vault, or a vault kind the annualized APY does not support",
    UnsupportedKindSchema.or(ErrorSchema),
  ),
};

// ---------------------------------------------------------------------------------------------
// Public surface

export const listPublic = createRoute({
  method: "get",
  path: "/tokenized_vaults",
  tags: TAGS,
  summary: "List tokenized vaults",
  description: LIST_DESCRIPTION,
  request: { query: PublicVaultListQuery },
  ...openRoute,
  responses: {
    200: jsonResponse("Vaults (public shape)", z.array(TokenizedVaultPublicSchema)),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const readPublic = createRoute({
  method: "get",
  path: "/tokenized_vaults/{vault_address}",
  tags: TAGS,
  summary: "One tokenized vault",
  description: READ_DESCRIPTION,
  request: { params: VaultPathParams, query: VaultReadQuery },
  ...openRoute,
  responses: {
    200: vaultJsonResponse("The vault (public shape)", TokenizedVaultPublicSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const apyPublic = createRoute({
  method: "get",
  path: "/tokenized_vaults/{vault_address}/annualized_apy",
  tags: TAGS,
  summary: "Annualized APY of a vault",
  description: APY_DESCRIPTION,
  request: { params: VaultPathParams, query: ChainOnlyQuery },
  ...openRoute,
  responses: {
    200: vaultJsonResponse("Annualized APY", AnnualizedApySchema),
    ...apy404,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

// ---------------------------------------------------------------------------------------------
// Institutional surface

export const listInst = createRoute({
  method: "get",
  path: "/tokenized_vault",
  tags: TAGS,
  summary: "List tokenized vaults (institutional shape)",
  description: LIST_DESCRIPTION,
  ...inst,
  request: { query: VaultListQuery },
  responses: {
    200: jsonResponse("Vaults (institutional shape)", z.array(TokenizedVaultSchema)),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const readInst = createRoute({
  method: "get",
  path: "/tokenized_vault/{vault_address}",
  tags: TAGS,
  summary: "One tokenized vault (institutional shape)",
  description: READ_DESCRIPTION,
  ...inst,
  request: { params: VaultPathParams, query: VaultReadQuery },
  responses: {
    200: vaultJsonResponse("The vault (institutional shape)", TokenizedVaultSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const apyInst = createRoute({
  method: "get",
  path: "/tokenized_vault/annualized_apy/{vault_address}",
  tags: TAGS,
  summary: "Annualized APY of a vault",
  description: APY_DESCRIPTION,
  ...inst,
  request: { params: VaultPathParams, query: ChainOnlyQuery },
  responses: {
    200: vaultJsonResponse("Annualized APY", AnnualizedApySchema),
    ...apy404,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const summaryInst = createRoute({
  method: "get",
  path: "/tokenized_vault/vault_summary/{vault_address}",
  tags: TAGS,
  summary: "Vault summary: name, type, chain, latest snapshot, 1/7/30-day returns",
  description:
    "Returns are `sp(D)/sp(D-h) - 1` on the vault's latest computed day D (null when the history is shorter than " +
    "h). The latest snapshot is the newest indexed share-ratio snapshot.",
  ...inst,
  request: { params: VaultPathParams, query: ChainOnlyQuery },
  responses: {
    200: vaultJsonResponse("Summary", VaultSummarySchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const timeseriesInst = createRoute({
  method: "get",
  path: "/tokenized_vault/{vault_address}/historical-timeseries",
  tags: TAGS,
  summary: "Daily time series of a vault",
  description:
    "One point per UTC day for the last `n_days` days up to today: TVL (USD), daily APY, daily PnL (asset units), " +
    "share price, totals (human units) and the share ratio. A day without a snapshot (or outside the vault's " +
    "computed history) has null figures and `missing: true`. `trailing_apy` is the vault's latest simple APY per " +
    "horizon.",
  ...inst,
  request: { params: VaultPathParams, query: TimeseriesQuery },
  responses: {
    200: vaultJsonResponse("Time series", TimeseriesSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const portfolioInst = createRoute({
  method: "get",
  path: "/tokenized_vault/{vault_address}/portfolio_data",
  tags: TAGS,
  summary: "Cached portfolio data of the vault's subaccounts",
  description:
    "Map from subaccount address to its cached portfolio data object (`positions`, `app_positions`, `tokens`); " +
    "`{}` when nothing is cached.",
  ...inst,
  request: { params: VaultPathParams, query: ChainOnlyQuery },
  responses: {
    200: vaultJsonResponse("Portfolio data per subaccount", PortfolioDataSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});
