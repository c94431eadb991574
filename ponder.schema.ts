/**
 * Indexed tables. Analysts read them through views of the same names in the `indexer` schema
 * (docs/schema.md documents every column). Raw token amounts are exact integers (numeric(78));
 * addresses are lower-case hex; timestamps are unix seconds.
 */
import { index, onchainTable, primaryKey } from "ponder";

/** One row per registered vault, kept current by config, fee and pause events and snapshots. */
export const vault = onchainTable(
  "vault",
  (t) => ({
    chain_id: t.integer().notNull(),
    address: t.hex().notNull(),
    family: t.text().notNull(),
    kind: t.text().notNull(),
    name: t.text().notNull(),
    symbol: t.text().notNull(),
    decimals: t.integer().notNull(),
    asset: t.hex().notNull(),
    asset_symbol: t.text().notNull(),
    asset_decimals: t.integer().notNull(),
    share_token: t.hex().notNull(),
    price_feed: t.hex(),
    alt_asset: t.hex(), // the second asset a tokenizedVaultV2 accepts and holds (registry altAsset)
    alt_asset_symbol: t.text(),
    alt_asset_decimals: t.integer(),
    alt_price_feed: t.hex(),
    timelock: t.hex(),
    start_block: t.bigint().notNull(),
    owner: t.hex(),
    pending_owner: t.hex(),
    operator: t.hex(),
    fee_collector: t.hex(),
    management_fee_percent: t.bigint(),
    max_change_percent: t.bigint(),
    max_supply: t.bigint(),
    lag_duration: t.bigint(), // lendingPool, tokenizedVaultV2: lagDuration() in seconds (immutable)
    deposits_paused: t.boolean().notNull(),
    withdrawals_paused: t.boolean().notNull(),
    total_assets: t.bigint(),
    total_supply: t.bigint(),
    asset_share_ratio: t.numeric({ precision: 78, scale: 18 }),
    last_snapshot_block: t.bigint(),
    last_snapshot_timestamp: t.bigint(),
    withdrawal_queue_head: t.integer().notNull(),
    withdrawal_queue_tail: t.integer().notNull(),
  }),
  (table) => ({ pk: primaryKey({ columns: [table.chain_id, table.address] }) }),
);

/** Deposits and withdraws (kind = deposit | withdraw). */
export const vault_event = onchainTable(
  "vault_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    kind: t.text().notNull(),
    sender: t.hex().notNull(),
    owner: t.hex().notNull(),
    receiver: t.hex().notNull(),
    assets: t.bigint().notNull(),
    shares: t.bigint().notNull(),
    asset: t.hex().notNull(),
    snapshot_id: t.text().notNull(), // the share_ratio_snapshot taken at this event's block
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({
    byVault: index().on(table.chain_id, table.vault, table.block_number),
    byOwner: index().on(table.owner),
    byReceiver: index().on(table.receiver),
  }),
);

/** Every share-token Transfer, mints (from 0x0) and burns (to 0x0) included. */
export const share_transfer = onchainTable(
  "share_transfer",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    token: t.hex().notNull(),
    from_address: t.hex().notNull(),
    to_address: t.hex().notNull(),
    shares: t.bigint().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({
    byVault: index().on(table.chain_id, table.vault, table.block_number),
    byFrom: index().on(table.from_address),
    byTo: index().on(table.to_address),
  }),
);

/** Redemption requests and, once processed, how they were paid. */
export const withdrawal_request = onchainTable(
  "withdrawal_request",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    owner: t.hex().notNull(),
    receiver: t.hex().notNull(),
    shares: t.bigint().notNull(),
    assets: t.bigint(), // gross assets at request (lendingPool); null for tokenizedVaultV2 (priced when processed)
    fee: t.bigint(),
    claimable_date: t.text(), // YYYY-MM-DD (lendingPool)
    status: t.text().notNull(), // requested | processed
    processed_assets: t.bigint(),
    processed_block_number: t.bigint(),
    processed_timestamp: t.bigint(),
    processed_tx_hash: t.hex(),
    // lendingPool's newest WithdrawalProcessed says whether the receiver was blacklisted; null
    // where the event does not say (its older version, tokenizedVaultV2) or not processed yet
    processed_blacklisted: t.boolean(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({
    byVault: index().on(table.chain_id, table.vault, table.status),
    byOwner: index().on(table.owner),
  }),
);

/** Helper for matching WithdrawalProcessed to its request (not documented for analysts). */
export const withdrawal_match = onchainTable("withdrawal_match", (t) => ({
  key: t.text().primaryKey(),
  request_ids: t.jsonb().$type<string[]>().notNull(),
}));

/**
 * Share-ratio snapshots: on a block interval per chain, and at every block with deposits or
 * withdraws (one per vault and block; vault_event.snapshot_id points at it).
 */
export const share_ratio_snapshot = onchainTable(
  "share_ratio_snapshot",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    source: t.text().notNull(), // interval | flow (the block of one or more deposits/withdraws)
    total_assets: t.bigint().notNull(),
    total_supply: t.bigint().notNull(),
    asset_share_ratio: t.numeric({ precision: 78, scale: 18 }),
    idle_assets: t.bigint().notNull(),
    subaccount_assets: t.bigint().notNull(), // sum of asset balanceOf over the registry's subaccounts
    // of idle_assets, what is owed: accrued fees and a lendingPool's processed, unclaimed claims
    // (null: the vault does not answer accruedFees/claimableAssets)
    reserved_assets: t.bigint(),
    asset_usd_price: t.numeric({ precision: 78, scale: 18 }),
    // alt asset balanceOf, vault + registry subaccounts (null: the vault has no alt asset)
    alt_assets: t.bigint(),
    alt_asset_usd_price: t.numeric({ precision: 78, scale: 18 }), // null without an alt asset feed
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex(),
    log_index: t.integer(),
  }),
  (table) => ({ byVault: index().on(table.chain_id, table.vault, table.timestamp) }),
);

/** TimelockController operations, one row per call of an operation. */
export const timelock_operation = onchainTable(
  "timelock_operation",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex(), // the vault the call targets, else the first vault the timelock owns
    timelock: t.hex().notNull(),
    operation_hash: t.hex().notNull(),
    call_index: t.integer().notNull(),
    target: t.hex().notNull(),
    value: t.bigint().notNull(),
    data: t.hex().notNull(),
    predecessor: t.hex().notNull(),
    salt: t.hex(),
    delay: t.bigint().notNull(),
    ready_at: t.bigint().notNull(),
    status: t.text().notNull(), // scheduled | executed | cancelled
    executed_at: t.bigint(),
    executed_tx_hash: t.hex(),
    cancelled_at: t.bigint(),
    cancelled_tx_hash: t.hex(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({
    byOperation: index().on(table.chain_id, table.timelock, table.operation_hash),
    byVault: index().on(table.chain_id, table.vault, table.status),
  }),
);

/**
 * TimelockControllers followed beside the registry's: a contract a vault's ownership moved to
 * that answers getMinDelay(), from that block on (what it emitted before was read then).
 */
export const timelock_source = onchainTable(
  "timelock_source",
  (t) => ({
    chain_id: t.integer().notNull(),
    address: t.hex().notNull(),
    vault: t.hex().notNull(), // the first vault that moved to it
    from_block: t.bigint().notNull(),
  }),
  (table) => ({ pk: primaryKey({ columns: [table.chain_id, table.address] }) }),
);

/** Roles, ownership, configuration, pause, subaccount and fee-setting changes. */
export const governance_event = onchainTable(
  "governance_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex(),
    contract: t.hex().notNull(),
    category: t.text().notNull(), // role | ownership | config | fee | pause | subaccount | timelock
    event: t.text().notNull(),
    args: t.jsonb().$type<Record<string, string | boolean>>().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byVault: index().on(table.chain_id, table.vault, table.block_number) }),
);

/** Fees charged to and collected from a vault (amounts in asset units; null where the event has none). */
export const fee_event = onchainTable(
  "fee_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    kind: t.text().notNull(), // management_fee_charged | fees_collected | withdrawal_fee
    amount: t.bigint(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byVault: index().on(table.chain_id, table.vault, table.timestamp) }),
);

/** Loans deployed by lending pools, with their current state. */
export const loan = onchainTable(
  "loan",
  (t) => ({
    chain_id: t.integer().notNull(),
    address: t.hex().notNull(),
    vault: t.hex().notNull(),
    borrower: t.hex().notNull(),
    principal_token: t.hex().notNull(),
    initial_principal: t.bigint().notNull(),
    principal_outstanding: t.bigint().notNull(),
    interest_repaid: t.bigint().notNull(),
    total_repaid: t.bigint().notNull(),
    apr_bps: t.bigint().notNull(),
    term_days: t.bigint().notNull(),
    state: t.text().notNull(), // funded | active | called | matured | closed
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
    updated_at: t.bigint().notNull(),
  }),
  (table) => ({ pk: primaryKey({ columns: [table.chain_id, table.address] }), byVault: index().on(table.vault) }),
);

/** Every loan event. */
export const loan_event = onchainTable(
  "loan_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    loan: t.hex().notNull(),
    event: t.text().notNull(),
    args: t.jsonb().$type<Record<string, string | boolean>>().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byLoan: index().on(table.chain_id, table.loan) }),
);

// ---- the protocol world of the subaccounts (issue 14) ----------------------------------------------

/** One row per registry subaccount Safe and chain where it exists: its Safe setup and module roles now. */
export const subaccount = onchainTable(
  "subaccount",
  (t) => ({
    chain_id: t.integer().notNull(),
    safe: t.hex().notNull(),
    module: t.hex(), // the SubaccountModule enabled on it (null before it is enabled, or once disabled)
    owners: t.jsonb().$type<string[]>().notNull(), // the Safe's owners
    threshold: t.integer().notNull(),
    // module roles: name (OWNER | TRADER | RELAYER, else the role's hash) -> accounts holding it
    roles: t.jsonb().$type<Record<string, string[]>>().notNull(),
    vault: t.hex(), // the module's vault (VaultSet), where withdrawToVault sends funds
    created_block: t.bigint(), // the SafeSetup block (null: set up before the indexed range)
    created_timestamp: t.bigint(),
    updated_at: t.bigint().notNull(),
  }),
  (table) => ({ pk: primaryKey({ columns: [table.chain_id, table.safe] }) }),
);

/** Helper: the Safe each enabled module serves (written at EnabledModule; not documented for analysts). */
export const subaccount_module = onchainTable(
  "subaccount_module",
  (t) => ({ chain_id: t.integer().notNull(), module: t.hex().notNull(), safe: t.hex().notNull() }),
  (table) => ({ pk: primaryKey({ columns: [table.chain_id, table.module] }) }),
);

/** Every event of the subaccounts' Safes (setup, modules, owners) and of their SubaccountModules. */
export const subaccount_event = onchainTable(
  "subaccount_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    safe: t.hex().notNull(),
    contract: t.hex().notNull(), // the Safe or its module
    source: t.text().notNull(), // safe | module
    event: t.text().notNull(),
    args: t.jsonb().$type<Record<string, string | boolean>>().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ bySafe: index().on(table.chain_id, table.safe, table.block_number) }),
);

/** The subaccounts' Aave v3 actions: supply, withdraw, borrow, repay, liquidation (where they are the user). */
export const aave_event = onchainTable(
  "aave_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    pool: t.hex().notNull(),
    subaccount: t.hex().notNull(),
    kind: t.text().notNull(), // supply | withdraw | borrow | repay | liquidation
    reserve: t.hex().notNull(), // the asset (liquidation: the debt asset)
    amount: t.bigint().notNull(), // raw reserve units (liquidation: debt covered)
    args: t.jsonb().$type<Record<string, string | boolean>>().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ bySubaccount: index().on(table.chain_id, table.subaccount, table.block_number) }),
);

/** The subaccounts' Morpho Blue actions in the registry's markets (where they are `onBehalf`). */
export const morpho_event = onchainTable(
  "morpho_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    morpho: t.hex().notNull(),
    market_id: t.hex().notNull(),
    subaccount: t.hex().notNull(),
    // supply | withdraw | borrow | repay | supply_collateral | withdraw_collateral
    kind: t.text().notNull(),
    caller: t.hex().notNull(),
    receiver: t.hex(), // withdraw, borrow, withdraw_collateral
    assets: t.bigint().notNull(),
    shares: t.bigint(), // null for collateral
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ bySubaccount: index().on(table.chain_id, table.subaccount, table.block_number) }),
);

/** Uniswap v3 position NFTs that have been held by a subaccount, with their state now. */
export const uniswap_position = onchainTable(
  "uniswap_position",
  (t) => ({
    chain_id: t.integer().notNull(),
    position_manager: t.hex().notNull(),
    token_id: t.bigint().notNull(),
    subaccount: t.hex(), // the subaccount it belongs to: holder, or depositor in the staker; null once gone
    owner: t.hex().notNull(), // the NFT's holder (the Safe, the staker, or where it went)
    staked: t.boolean().notNull(), // deposited in the v3 staker for the subaccount
    token0: t.hex().notNull(),
    token1: t.hex().notNull(),
    fee: t.integer().notNull(),
    tick_lower: t.integer().notNull(),
    tick_upper: t.integer().notNull(),
    liquidity: t.bigint().notNull(), // from IncreaseLiquidity / DecreaseLiquidity
    block_number: t.bigint().notNull(), // when a subaccount first received it
    updated_at: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.chain_id, table.position_manager, table.token_id] }),
    bySubaccount: index().on(table.chain_id, table.subaccount),
  }),
);

/**
 * Events of the subaccounts' positions: position manager Transfer (to or from a subaccount),
 * IncreaseLiquidity, DecreaseLiquidity, Collect; staker DepositTransferred, TokenStaked,
 * TokenUnstaked, RewardClaimed (to a subaccount).
 */
export const uniswap_event = onchainTable(
  "uniswap_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    contract: t.hex().notNull(), // the position manager or the staker
    subaccount: t.hex().notNull(),
    token_id: t.bigint(), // null for RewardClaimed
    event: t.text().notNull(),
    args: t.jsonb().$type<Record<string, string | boolean>>().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({
    bySubaccount: index().on(table.chain_id, table.subaccount, table.block_number),
    byToken: index().on(table.chain_id, table.token_id),
  }),
);

/**
 * The Uniswap v3 staker's incentives: every IncentiveCreated (anyone's, in any token: the staker
 * takes incentives from anyone). A key created again before its start adds to its reward and
 * has a row per log. Read by the account reads and the dex_pool builders in place of the
 * staker's logs (onchain/staker.ts, db/staker-incentives.ts).
 */
export const uniswap_incentive = onchainTable(
  "uniswap_incentive",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    staker: t.hex().notNull(),
    incentive_id: t.hex().notNull(), // keccak256(abi.encode(key))
    reward_token: t.hex().notNull(),
    pool: t.hex().notNull(),
    start_time: t.bigint().notNull(),
    end_time: t.bigint().notNull(),
    refundee: t.hex().notNull(),
    reward: t.bigint().notNull(), // this log's reward (a top-up's part)
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byStaker: index().on(table.chain_id, table.staker, table.block_number) }),
);

/** The stakers whose incentives are indexed, and the block they are indexed from. */
export const uniswap_staker = onchainTable(
  "uniswap_staker",
  (t) => ({
    chain_id: t.integer().notNull(),
    address: t.hex().notNull(),
    indexed_from: t.bigint().notNull(),
  }),
  (table) => ({ pk: primaryKey({ columns: [table.chain_id, table.address] }) }),
);

/** The subaccounts' deposits through the perp bridges (Deposited). */
export const perp_deposit = onchainTable(
  "perp_deposit",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    bridge: t.hex().notNull(),
    core_hash: t.hex().notNull(),
    depositor: t.hex().notNull(),
    token: t.hex().notNull(),
    amount: t.bigint().notNull(),
    destination: t.integer().notNull(), // 0 perp, 1 spot
    nonce: t.bigint().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byHash: index().on(table.core_hash), byDepositor: index().on(table.depositor) }),
);

/** The core ledger's answers to deposits: Credited (subaccounts' deposits) and Rejected (every one). */
export const perp_core_event = onchainTable(
  "perp_core_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(), // the core chain
    ledger: t.hex().notNull(),
    core_hash: t.hex().notNull(),
    kind: t.text().notNull(), // credited | rejected
    depositor: t.hex(), // credited only (rejections carry the hash alone)
    bridge: t.hex(),
    source_chain_id: t.bigint(),
    token: t.hex(),
    amount: t.bigint(),
    destination: t.integer(),
    reason: t.text(), // rejected only
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byHash: index().on(table.core_hash), byDepositor: index().on(table.depositor) }),
);

/** Loans of each chain's LoanRegistry (its loan books), with their state now. */
export const loanbook_loan = onchainTable(
  "loanbook_loan",
  (t) => ({
    chain_id: t.integer().notNull(),
    address: t.hex().notNull(),
    registry: t.hex().notNull(),
    vault: t.hex(), // the lending pool that deployed it (its lender); null for other loans
    lender: t.hex().notNull(),
    borrower: t.hex().notNull(),
    principal_token: t.hex().notNull(),
    collateral_token: t.hex(),
    initial_principal: t.bigint().notNull(),
    principal_outstanding: t.bigint().notNull(),
    interest_repaid: t.bigint().notNull(),
    total_repaid: t.bigint().notNull(),
    apr_bps: t.bigint().notNull(),
    term_days: t.bigint().notNull(),
    payment_interval: t.bigint().notNull(), // seconds
    deployed_date: t.bigint().notNull(), // unix seconds
    // preapproved | funding_required | funded | active | called | cancelled | matured | closed
    state: t.text().notNull(),
    block_number: t.bigint().notNull(), // registration
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
    updated_at: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.chain_id, table.address] }),
    byLender: index().on(table.chain_id, table.lender),
    byBorrower: index().on(table.chain_id, table.borrower),
  }),
);

/** Every event of a registry loan from its registration on. */
export const loanbook_event = onchainTable(
  "loanbook_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    loan: t.hex().notNull(),
    event: t.text().notNull(),
    args: t.jsonb().$type<Record<string, string | boolean>>().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byLoan: index().on(table.chain_id, table.loan) }),
);

/** The lending vaults' (ERC-4626 over Morpho) deposits and withdraws. */
export const lending_vault_event = onchainTable(
  "lending_vault_event",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    kind: t.text().notNull(), // deposit | withdraw
    sender: t.hex().notNull(),
    owner: t.hex().notNull(),
    receiver: t.hex().notNull(),
    assets: t.bigint().notNull(),
    shares: t.bigint().notNull(),
    snapshot_id: t.text().notNull(),
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex().notNull(),
    log_index: t.integer().notNull(),
  }),
  (table) => ({ byVault: index().on(table.chain_id, table.vault, table.block_number) }),
);

/** Lending-vault share price: totalAssets and totalSupply at each deposit/withdraw block and on an interval. */
export const lending_vault_snapshot = onchainTable(
  "lending_vault_snapshot",
  (t) => ({
    id: t.text().primaryKey(),
    chain_id: t.integer().notNull(),
    vault: t.hex().notNull(),
    source: t.text().notNull(), // interval | flow
    total_assets: t.bigint().notNull(),
    total_supply: t.bigint().notNull(),
    asset_share_ratio: t.numeric({ precision: 78, scale: 18 }), // total_assets / total_supply; null at 0 supply
    block_number: t.bigint().notNull(),
    timestamp: t.bigint().notNull(),
    tx_hash: t.hex(),
    log_index: t.integer(),
  }),
  (table) => ({ byVault: index().on(table.chain_id, table.vault, table.timestamp) }),
);
