/**
 * Headless Chromium for the tests that open a page in a real browser (the API reference pages):
 * Debian's `chromium` package, found at /usr/bin/chromium (or `CHROMIUM_PATH`). `ensureChromium`
 * installs the package with apt-get when it is missing and we run as root, as redis.ts does for
 * redis-server, so a fresh CI machine gets it; otherwise it says how to install it.
 *
 * `CHROMIUM_ARGS` keep the browser to the pages it is given: no GPU, no sandbox (root in a
 * container), and none of its own background traffic (component updates, sync, field trials),
 * so a test can require that a page makes no request beyond its own origin.
 */
import { aptInstall, isExecutable } from "./apt.js";

export type ChromiumLog = (line: string) => void;

const defaultLog: ChromiumLog = (line) => process.stdout.write(`[chromium] ${line}\n`);

/** Where Debian's package puts the browser's launcher. */
export const DEBIAN_CHROMIUM = "/usr/bin/chromium";

export const CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-extensions",
  "--disable-field-trial-config",
  "--metrics-recording-only",
];

const HOW_TO_INSTALL =
  "Install it with `apt-get install -y chromium` (Debian) or point CHROMIUM_PATH at a Chromium or Chrome binary.";

/** The browser binary: `CHROMIUM_PATH` when set, else Debian's, if executable. */
export function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, DEBIAN_CHROMIUM].filter((p): p is string => !!p);
  return candidates.find(isExecutable);
}

let ensurePromise: Promise<string> | undefined;

/**
 * Path of a Chromium binary. If none is found and we run as root with apt-get, installs the
 * `chromium` package (`apt-get update` and a retry if the first attempt fails). Otherwise
 * throws an Error saying how to install it. Idempotent: concurrent and repeated calls share
 * one look-up or installation.
 */
export function ensureChromium(log: ChromiumLog = defaultLog): Promise<string> {
  ensurePromise ??= installIfMissing(log).catch((err: unknown) => {
    ensurePromise = undefined; // a later call tries again
    throw err;
  });
  return ensurePromise;
}

async function installIfMissing(log: ChromiumLog): Promise<string> {
  const found = findChromium();
  if (found) return found;
  if (process.env.CHROMIUM_PATH) {
    throw new Error(`CHROMIUM_PATH=${process.env.CHROMIUM_PATH} is not an executable file. ${HOW_TO_INSTALL}`);
  }
  const installed = await aptInstall("chromium", { log, howTo: HOW_TO_INSTALL, found: findChromium });
  log(`installed ${installed}`);
  return installed;
}
