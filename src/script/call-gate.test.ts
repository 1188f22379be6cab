import { describe, expect, test } from 'vitest';
import { CallGate } from './call-gate.js';

describe('CallGate', () => {
  test('admits up to the total, then refuses', () => {
    const gate = new CallGate(2, 1);
    expect([gate.admit(), gate.admit(), gate.admit()]).toEqual([true, true, false]);
  });

  test('runs at most `concurrency` at once, queues the rest in order', async () => {
    const gate = new CallGate(100, 3);
    const order: number[] = [];
    let running = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        gate.run(async () => {
          running += 1;
          most = Math.max(most, running);
          order.push(index);
          await new Promise((resolve) => setTimeout(resolve, 2));
          running -= 1;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(gate.maxRunning).toBe(3);
    expect(order).toEqual(Array.from({ length: 20 }, (_, index) => index));
    expect(gate.running).toBe(0);
  });

  test('a failing task frees its slot', async () => {
    const gate = new CallGate(10, 1);
    await expect(gate.run(() => Promise.reject(new Error('x')))).rejects.toThrow('x');
    await expect(gate.run(() => Promise.resolve(5))).resolves.toBe(5);
  });
});
