/** Runs `fn` with an overall deadline; past it, `onTimeout()` is the answer (`fn` runs on). */
export async function withDeadline<T>(ms: number, fn: () => Promise<T>, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<T>((resolve) => (timer = setTimeout(() => resolve(onTimeout()), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
