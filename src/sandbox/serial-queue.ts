/**
 * Runs tasks one at a time, with a pause after each, so a burst (fifty sandboxes starting at once, a
 * workspace check per running script) never holds the gateway's event loop for long: every fork
 * blocks it for a few milliseconds, and other requests get their turn in between.
 */
export function createSerialQueue(gapMs: number): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task);
    tail = run.then(
      () => pause(gapMs),
      () => pause(gapMs),
    );
    return run;
  };
}

function pause(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms).unref());
}
