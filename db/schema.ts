/**
 * Types of the tables the jobs read and write. Raw token amounts, numeric columns and int8
 * travel as strings (exact); dates as 'YYYY-MM-DD' strings; display figures (APY) as numbers.
 */
import type { ColumnType, Insertable, Selectable } from "kysely";

type Num = string; // numeric / int8 as read from pg
type Ts = ColumnType<Date, Date | string, Date | string>;

/** Indexed tables, read through the stable views schema (INDEXER_SCHEMA, default `indexer`). */
export interface IndexerTables {
  vault: {
    chain_id: number;
    address: string;
    family: string;
    kind: string;
    name: string;
    symbol: string;
    decimals: number;
    asset: string;
    asset_symbol: string;
    asset_decimals: number;
    share_token: string;
    price_feed: string | null;
    alt_asset: string | null;
    alt_asset_symbol: string | null;
    alt_asset_decimals: number | null;
    alt_price_feed: string | null;
    timelock: string | null;
    start_block: Num;
    owner: string | null;
    pending_owner: string | null;
    operator: string | null;
    fee_collector: string | null;
    management_fee_percent: Num | null;
    max_change_percent: Num | null;
    max_supply: Num | null;
    lag_duration: Num | null;
    deposits_paused: boolean;
    withdrawals_paused: boolean;
    total_assets: Num | null;
    total_supply: Num | null;
    asset_share_ratio: Num | null;
    last_snapshot_block: Num | null;
    last_snapshot_timestamp: Num | null;
    withdrawal_queue_head: number;
    withdrawal_queue_tail: number;
  };
  withdrawal_request: {
    id: string;
    chain_id: number;
    vault: string;
    owner: string;
    receiver: string;
    shares: Num;
    assets: Num | null;
    fee: Num | null;
    claimable_date: string | null;
    status: string;
    processed_assets: Num | null;
    processed_block_number: Num | null;
    processed_timestamp: Num | null;
    processed_tx_hash: string | null;
    block_number: Num;
    timestamp: Num;
    tx_hash: string;
    log_index: number;
  };
  timelock_operation: {
    id: string;
    chain_id: number;
    vault: string | null;
    timelock: string;
    operation_hash: string;
    call_index: number;
    target: string;
    value: Num;
    data: string;
    predecessor: string;
    salt: string | null;
    delay: Num;
    ready_at: Num;
    status: string;
    executed_at: Num | null;
    executed_tx_hash: string | null;
    cancelled_at: Num | null;
    cancelled_tx_hash: string | null;
    block_number: Num;
    timestamp: Num;
    tx_hash: string;
    log_index: number;
  };
  governance_event: {
    id: string;
    chain_id: number;
    vault: string | null;
    contract: string;
    category: string;
    event: string;
    args: Record<string, string | boolean>;
    block_number: Num;
    timestamp: Num;
    tx_hash: string;
    log_index: number;
  };
  loan: {
    chain_id: number;
    address: string;
    vault: string;
    borrower: string;
    principal_token: string;
    initial_principal: Num;
    principal_outstanding: Num;
    interest_repaid: Num;
    total_repaid: Num;
    apr_bps: Num;
    term_days: Num;
    state: string;
    block_number: Num;
    timestamp: Num;
    tx_hash: string;
    log_index: number;
    updated_at: Num;
  };
  share_ratio_snapshot: {
    id: string;
    chain_id: number;
    vault: string;
    source: string;
    total_assets: Num;
    total_supply: Num;
    asset_share_ratio: Num | null;
    idle_assets: Num;
    subaccount_assets: Num;
    reserved_assets: Num | null;
    asset_usd_price: Num | null;
    alt_assets: Num | null;
    alt_asset_usd_price: Num | null;
    block_number: Num;
    timestamp: Num;
  };
  share_transfer: {
    id: string;
    chain_id: number;
    vault: string;
    from_address: string;
    to_address: string;
    shares: Num;
    block_number: Num;
    timestamp: Num;
    log_index: number;
  };
  fee_event: {
    id: string;
    chain_id: number;
    vault: string;
    kind: string;
    amount: Num | null;
    timestamp: Num;
  };
  vault_event: {
    id: string;
    chain_id: number;
    vault: string;
    kind: string;
    sender: string;
    owner: string;
    receiver: string;
    assets: Num;
    shares: Num;
    asset: string;
    snapshot_id: string;
    block_number: Num;
    timestamp: Num;
    tx_hash: string;
    log_index: number;
  };
}

export interface VaultDayTable {
  chain_id: number;
  vault: string;
  day: string;
  missing: boolean;
  snapshot_id: string | null;
  snapshot_timestamp: Num | null;
  block_number: Num | null;
  share_price: Num | null;
  total_assets: Num | null;
  total_shares: Num | null;
  asset_share_ratio: Num | null;
  asset_usd_price: Num | null;
  tvl: Num | null;
  daily_apy: number | null;
  daily_pnl: Num | null;
  fees_charged: Num;
  gross_daily_apy: number | null;
  fingerprint: string;
  computed_at: Ts;
}

export interface VaultApyTable {
  chain_id: number;
  vault: string;
  day: string;
  horizon: string;
  span_days: number;
  simple_apy: number;
  compound_apy: number;
  gross_simple_apy: number;
  gross_compound_apy: number;
  pnl_per_share: number;
  daily_pnl_per_share: number;
  computed_at: Ts;
}

export interface UnrealizedPnlTable {
  chain_id: number;
  vault: string;
  snapshot_id: string;
  day: string;
  timestamp: Num;
  block_number: Num;
  vault_name: string;
  strategist_name: string | null;
  reference_asset: string;
  asset_price: Num | null;
  tvl_on_vault: Num;
  actual_tvl: Num;
  alt_assets: Num | null;
  alt_asset_price: Num | null;
  alt_assets_in_asset: Num | null;
  current_redeem_ratio: Num | null;
  adjusted_redeem_ratio: Num | null;
  unrealized_pnl: Num | null;
  unrealized_pnl_in_asset: Num;
  computed_at: Ts;
}

export type HorizonMap = Record<string, number>;

export interface VaultMetricsTable {
  chain_id: number;
  vault: string;
  as_of_day: string;
  first_day: string;
  tvl: Num | null;
  share_price: Num | null;
  historical_apy: ColumnType<HorizonMap, string, string>;
  historical_compound_apy: ColumnType<HorizonMap, string, string>;
  gross_apy: ColumnType<HorizonMap, string, string>;
  gross_compound_apy: ColumnType<HorizonMap, string, string>;
  pnl_per_share: ColumnType<HorizonMap, string, string>;
  daily_pnl_per_share: ColumnType<HorizonMap, string, string>;
  returns: ColumnType<HorizonMap, string, string>;
  liquid_apy_7d: number | null;
  liquid_apy_30d: number | null;
  max_drawdown: number | null;
  max_daily_drawdown: number | null;
  apy_computed_at: Ts;
  share_ratio_snapshot_at: Ts | null;
  cached_at: Ts;
}

/**
 * derived.points_entry (a view over the registry, migration 0010): the registry's entries
 * (signup bonuses, streak claims, manual points).
 */
export interface PointsEntryView {
  wallet: string;
  day: string;
  source: "signup_bonus" | "daily_streak" | "manual";
  chain_id: number;
  vault: string;
  ref: string;
  points: Num;
}

/** derived.points_ledger (a view): the entries, and holding and referral points per day. */
export interface PointsLedgerView {
  wallet: string;
  day: string;
  source: "holding" | "referral" | "signup_bonus" | "daily_streak" | "manual";
  chain_id: number;
  vault: string;
  ref: string;
  points: Num;
  shares: Num | null;
  usd_value: Num | null;
}

export interface PointsRulesTable {
  id: ColumnType<boolean, boolean | undefined, never>;
  points_per_usd_per_day: Num;
  referral_share: Num;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface PointsIndexTable {
  chain_id: number;
  vault: string;
  day: string;
  asset_decimals: number;
  ratio: Num | null;
  price: Num | null;
  multiplier: Num;
  points_per_share: Num;
  cum_points_per_share: Num;
}

export interface PointsVaultTable {
  chain_id: number;
  vault: string;
  day: string;
  asset_decimals: number;
  ratio: Num | null;
  price: Num | null;
  cum_points_per_share: Num;
  computed_at: Ts;
}

export interface PointsPositionTable {
  chain_id: number;
  vault: string;
  wallet: string;
  day: string;
  shares: Num;
  /** share-seconds of the row's first day (migration 0018) */
  day_share_seconds: Num;
  next_day: string | null;
  base_points: Num;
  points: Num | null;
  settled_points: Num;
}

export interface PointsDepositTable {
  chain_id: number;
  vault: string;
  wallet: string;
  lifetime_deposit: Num;
  last_deposit_day: string;
}

/** derived.points_pool (a view) */
export interface PointsPoolView {
  wallet: string;
  chain_id: number;
  vault: string;
  total_points: Num;
  position_day: string | null;
  shares: Num;
  native_amount: Num;
  usd_value: Num;
  lifetime_deposit: Num;
}

/** derived.points_referral (a view) */
export interface PointsReferralView {
  referrer: string;
  referee: string;
  total_points: Num;
}

/** derived.points_total (a view): derived.points_balance without the ranks */
export interface PointsTotalView {
  wallet: string;
  total_points: Num;
  holding_points: Num;
  referral_earnings: Num;
  signup_bonus: Num;
  daily_streak_points: Num;
  manual_points: Num;
  streak_days: number;
  last_claim_day: string | null;
  usd_value: Num;
  top_vault_chain_id: number | null;
  top_vault: string | null;
  top_vault_lifetime_deposit: Num | null;
}

/** derived.points_balance (a view) */
export interface PointsBalanceView extends PointsTotalView {
  rank_total: number;
  rank_streak: number;
  computed_at: Ts;
}

export interface RewardTable {
  id: ColumnType<string, string | undefined, never>;
  chain_id: number;
  vault: string;
  text: string;
  img_url: string | null;
  multiplier: Num;
  start_datetime: Ts;
  end_datetime: Ts | null;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface PointsUserTable {
  address: string;
  referrer: string | null;
  chain_id: number;
  registered_at: Ts;
  signup_bonus: ColumnType<Num, Num | undefined, Num>;
  id: ColumnType<string, string | undefined, never>;
}

export interface RegisterNonceTable {
  address: string;
  nonce: string;
  chain_id: number;
  used_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface OperatorAccountTable {
  username: string;
  password_hash: string;
  scopes: ColumnType<string[], string[] | undefined, string[]>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  disabled_at: Ts | null;
  /** bearer tokens issued before it are refused */
  password_changed_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ApiSecretTable {
  name: string;
  value: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface IdempotencyTable {
  principal: string;
  key: string;
  request_hash: string;
  status: number;
  body: ColumnType<unknown, string, string>;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface WriteAuditTable {
  id: ColumnType<string, string | undefined, never>;
  at: ColumnType<Date, Date | string | undefined, never>;
  principal_kind: "api_key" | "operator";
  principal_id: string;
  action: string;
  target: string | null;
  method: string;
  path: string;
  status: number;
  outcome: "ok" | "refused";
  code: string | null;
  request_id: string | null;
  idempotency_key: string | null;
  detail: ColumnType<Record<string, unknown>, string | undefined, string>;
}

/** registry.build_audit: every transaction a builder route built or refused (api/lib/build/audit.ts). */
export interface BuildAuditTable {
  id: ColumnType<string, string, never>;
  at: ColumnType<Date, Date | string | undefined, never>;
  principal_kind: "api_key" | "operator";
  principal_id: string;
  action: string;
  path: string;
  chain_id: number | null;
  subaccount: string | null;
  status: number;
  outcome: "built" | "refused";
  code: string | null;
  request_id: string | null;
  request: ColumnType<unknown, string, string>;
  answer: ColumnType<unknown, string, string>;
}

export interface StreakClaimTable {
  address: string;
  day: string;
  streak_days: number;
  points: Num;
  claimed_at: Ts;
}

export interface ManualPointsTable {
  id: ColumnType<string, string | undefined, never>;
  wallet: string;
  points: Num;
  reason: string;
  author: string;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface StrategistTable {
  id: ColumnType<string, string | undefined, never>;
  name: string;
  logo_url: string | null;
  website_url: string | null;
  address: string | null;
}

export interface RegistryVaultTable {
  id: ColumnType<string, string | undefined, never>;
  chain_id: number;
  address: string;
  family: string;
  kind: string | null;
  name: string;
  symbol: string;
  status: string;
  chain_type: string;
  strategist_id: string | null;
  start_datetime: Ts | null;
  attributes: ColumnType<Record<string, unknown>, string, string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface SubaccountTable {
  id: ColumnType<string, string | undefined, never>;
  chain_id: number;
  vault: string;
  address: string;
  internal_name: string | null;
  friendly_name: string | null;
  status: string;
  subaccount_type: string;
  strategist_id: string | null;
  /** the health factor its operator keeps it above (migration 0011) */
  min_health_factor: Num | null;
  /** the wallets that fund it besides its vault, lower case (migration 0015) */
  funding: ColumnType<string[], string[] | undefined, string[]>;
}

/** derived.lending_vault_day (migration 0014): a lending vault's share price at the end of a UTC day. */
export interface LendingVaultDayTable {
  chain_id: number;
  vault: string;
  day: ColumnType<string, string, string>;
  total_assets: string;
  total_supply: string;
  asset_share_ratio: string | null;
  block_number: ColumnType<string, string | bigint, string | bigint>;
  timestamp: ColumnType<string, string | bigint, string | bigint>;
  apy_7d: number | null;
  computed_at: ColumnType<Date, Date | undefined, Date>;
}

/** derived.subaccount_day (migration 0012): a subaccount's valuation at the end of a UTC day, USD. */
export interface SubaccountDayTable {
  address: string;
  day: string;
  total_account_value: number;
  total_collateral_value: number;
  total_loan_value: number;
  total_loan_interest_amount: number;
  liquidation_collateral: number;
  net_account_value: number;
  total_net_deposits: number;
  total_pnl: number;
  health_factor: number | null;
  blocks: ColumnType<unknown, string, string>;
  /** the funding wallets its net deposits count, sorted (migration 0015) */
  funding: ColumnType<string[], string[] | undefined, string[]>;
  /** the valuation method the row was computed with (migration 0016; VALUATION_METHOD) */
  method: ColumnType<number, number | undefined, number>;
  computed_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** registry.chain_protocols (migration 0011): a chain's `protocols` entry of the registry file. */
export interface ChainProtocolsTable {
  chain_id: number;
  protocols: ColumnType<unknown, string, string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface OperatorTable {
  id: ColumnType<string, string | undefined, never>;
  chain_id: number;
  vault: string;
  address: string;
  operator_type: "eoa" | "subaccount";
  name: string | null;
}

export interface StrategyApySnapshotTable {
  id: ColumnType<string, string | undefined, never>;
  vault_address: string;
  chain: number;
  platform_name: string;
  strategy_type: string;
  allocation: number;
  apy: number;
  points_apy: number;
  strategist_address: string | null;
  snapshot_datetime: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface PortfolioCacheTable {
  chain_id: number;
  vault: string;
  subaccount: string;
  data: ColumnType<Record<string, unknown>, string, string>;
  cached_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface AuditEntryTable {
  id: ColumnType<string, string | undefined, never>;
  chain_id: number;
  vault: string;
  category: string;
  text: string;
  occurred_at: Ts;
  author: string;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ApiKeyTable {
  id: ColumnType<string, string | undefined, never>;
  name: string;
  prefix: string;
  key_hash: string;
  scopes: ColumnType<string[], string[] | undefined, string[]>;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  revoked_at: Ts | null;
}

/** derived.jobs_progress: per chain, the indexer checkpoint the derived tables are computed from. */
export interface JobsProgressTable {
  chain_id: number;
  block_number: Num;
  block_time: Ts;
  computed_at: Ts;
  run_id: string | null;
}

export interface VaultBackfillTable {
  chain_id: number;
  vault: string;
  start_block: Num;
  backfilled_to_block: Num;
  backfilled_at: Date;
  deployment_schema: string;
}

export interface Database {
  "derived.vault_day": VaultDayTable;
  "derived.vault_apy": VaultApyTable;
  "derived.unrealized_pnl": UnrealizedPnlTable;
  "derived.vault_metrics": VaultMetricsTable;
  "derived.points_entry": PointsEntryView;
  "derived.points_ledger": PointsLedgerView;
  "derived.points_rules": PointsRulesTable;
  "derived.points_index": PointsIndexTable;
  "derived.points_vault": PointsVaultTable;
  "derived.points_position": PointsPositionTable;
  "derived.points_deposit": PointsDepositTable;
  "derived.points_pool": PointsPoolView;
  "derived.points_referral": PointsReferralView;
  "derived.points_total": PointsTotalView;
  "derived.points_balance": PointsBalanceView;
  "derived.jobs_progress": JobsProgressTable;
  "registry.reward": RewardTable;
  "registry.points_user": PointsUserTable;
  "registry.streak_claim": StreakClaimTable;
  "registry.manual_points": ManualPointsTable;
  "registry.strategist": StrategistTable;
  "registry.vault": RegistryVaultTable;
  "registry.subaccount": SubaccountTable;
  "registry.chain_protocols": ChainProtocolsTable;
  "derived.subaccount_day": SubaccountDayTable;
  "derived.lending_vault_day": LendingVaultDayTable;
  "registry.operator": OperatorTable;
  "registry.strategy_apy_snapshot": StrategyApySnapshotTable;
  "registry.portfolio_cache": PortfolioCacheTable;
  "registry.audit_entry": AuditEntryTable;
  "auth.api_key": ApiKeyTable;
  "registry.register_nonce": RegisterNonceTable;
  "auth.operator_account": OperatorAccountTable;
  "auth.api_secret": ApiSecretTable;
  "registry.idempotency": IdempotencyTable;
  "registry.write_audit": WriteAuditTable;
  "registry.build_audit": BuildAuditTable;
  "ops.vault_backfill": VaultBackfillTable;
}

export type VaultDayRow = Insertable<VaultDayTable>;
export type VaultApyRow = Insertable<VaultApyTable>;
export type UnrealizedPnlRow = Insertable<UnrealizedPnlTable>;
export type VaultMetrics = Selectable<VaultMetricsTable>;
