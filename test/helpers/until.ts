/** Polls `find` every `interval` ms until it returns something other than undefined; fails after `timeout` ms. */
export async function until<T>(find: () => T | undefined, timeout = 60_000, interval = 10): Promise<T> {
  const deadline = Date.now() + timeout
  for (;;) {
    const found = find()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms`)
    await new Promise((resolve) => setTimeout(resolve, interval))
  }
}
