/**
 * What a DATABASE_URL must be, shared by the services' settings (`envPostgresUrl`, with zod) and
 * the command-line tools (`scripts/lib/cli.ts`, which load no zod for --help): a postgres:// or
 * postgresql:// URL that pg can read, with `new URL`, or with a placeholder host when it has none
 * (`postgres://u@/db`, a Unix socket).
 */
export const POSTGRES_SCHEME = /^postgres(ql)?:\/\//;

export const POSTGRES_URL_FORM =
  "is not a valid URL (postgres://user:password@host:port/database, special characters percent-encoded)";

export const parsablePostgresUrl = (s: string): boolean =>
  URL.canParse(s) || URL.canParse(s.replace("@/", "@___DUMMY___/"));
