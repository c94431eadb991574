/** Every migration, in order. Files are frozen once landed: add new ones with a later date. */
import type { Migration } from "kysely";
import * as m0001 from "./2026-11-22-0001-derived.js";
import * as m0002 from "./2026-11-22-0002-registry.js";
import * as m0003 from "./2026-11-22-0003-registry-api.js";
import * as m0004 from "./2026-11-22-0004-writes.js";
import * as m0005 from "./2026-11-22-0005-auth-schema.js";
import * as m0006 from "./2026-11-22-0006-password-changed.js";
import * as m0007 from "./2026-11-22-0007-points-index.js";
import * as m0008 from "./2026-11-22-0008-jobs-progress.js";
import * as m0009 from "./2026-11-23-0009-unrealized-pnl-alt-asset.js";
import * as m0010 from "./2026-11-23-0010-points-entry-view.js";
import * as m0011 from "./2026-11-23-0011-chain-protocols.js";
import * as m0012 from "./2026-11-23-0012-subaccount-day.js";
import * as m0013 from "./2026-11-23-0013-build-audit.js";
import * as m0014 from "./2026-11-23-0014-lending-vault-day.js";
import * as m0015 from "./2026-11-27-0015-subaccount-funding.js";
import * as m0016 from "./2026-11-27-0016-subaccount-day-recount.js";
import * as m0017 from "./2026-11-28-0017-points-top-vault-usd.js";
import * as m0018 from "./2026-11-28-0018-points-time-weighted.js";

export const migrations: Record<string, Migration> = {
  "2026-11-22-0001-derived": m0001,
  "2026-11-22-0002-registry": m0002,
  "2026-11-22-0003-registry-api": m0003,
  "2026-11-22-0004-writes": m0004,
  "2026-11-22-0005-auth-schema": m0005,
  "2026-11-22-0006-password-changed": m0006,
  "2026-11-22-0007-points-index": m0007,
  "2026-11-22-0008-jobs-progress": m0008,
  "2026-11-23-0009-unrealized-pnl-alt-asset": m0009,
  "2026-11-23-0010-points-entry-view": m0010,
  "2026-11-23-0011-chain-protocols": m0011,
  "2026-11-23-0012-subaccount-day": m0012,
  "2026-11-23-0013-build-audit": m0013,
  "2026-11-23-0014-lending-vault-day": m0014,
  "2026-11-27-0015-subaccount-funding": m0015,
  "2026-11-27-0016-subaccount-day-recount": m0016,
  "2026-11-28-0017-points-top-vault-usd": m0017,
  "2026-11-28-0018-points-time-weighted": m0018,
};
