import { describe, expect, it } from 'vitest';
import { createSerialDiskUsage } from './workspace-watchdog.js';

describe('createSerialDiskUsage', () => {
  it('runs one walk at a time and lets a queued directory share its walk', async () => {
    let running = 0;
    let most = 0;
    const walked: string[] = [];
    const measure = createSerialDiskUsage(async (dir) => {
      running += 1;
      most = Math.max(most, running);
      walked.push(dir);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running -= 1;
      if (dir === 'bad') throw new Error('vanished');
      return dir.length;
    });
    const results = await Promise.allSettled([
      measure('a'),
      measure('bb'),
      measure('bb'),
      measure('bad'),
      measure('ccc'),
    ]);
    expect(most).toBe(1);
    expect(walked).toEqual(['a', 'bb', 'bad', 'ccc']);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value : 'failed'))).toEqual([
      1,
      2,
      2,
      'failed',
      3,
    ]);
  });
});
