/**
 * Names every command needs before it loads anything heavy: the repository's root and the
 * `indexer` views schema. Nothing else lives here, so `--help` can import it for free.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The schema of the stable `indexer` views over the live deployment (docs/schema.md). */
export const VIEWS_SCHEMA = "indexer";
