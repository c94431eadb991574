/**
 * The UTC day a pending redemption request falls due, `YYYY-MM-DD`, as SQL over an
 * `indexer.withdrawal_request` row `r` and its `indexer.vault` row `v`: a lendingPool request's
 * claimable date (its event's); a tokenizedVaultV2 request's, the day its vault's lag
 * (`lagDuration()`, read when the vault is first indexed) has passed since it was made: the
 * vault pays a request once `requestedAt + lagDuration` is past. Null when neither is known.
 * Shared by the pending-redemption summaries and the withdrawal queue, so both date alike.
 */
import { sql } from "kysely";

export const dueDateSql = (r: string, v: string) =>
  sql<string | null>`coalesce(${sql.ref(`${r}.claimable_date`)}, CASE WHEN ${sql.ref(`${v}.lag_duration`)} IS NOT NULL
    THEN to_char(to_timestamp((${sql.ref(`${r}.timestamp`)} + ${sql.ref(`${v}.lag_duration`)})::double precision)
      AT TIME ZONE 'UTC', 'YYYY-MM-DD') END)`;
