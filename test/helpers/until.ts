/**
 * Polls `probe` until it answers something truthy, and returns it: for states a test cannot await
 * as an event (another process acting on its own schedule). Fails after `timeoutMs`, naming `what`.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
