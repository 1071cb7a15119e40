import { ReadyFirstGate } from './ready-first';

describe('ReadyFirstGate', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const tracked = (p: Promise<void>) => {
    const state = { done: false };
    void p.then(() => (state.done = true));
    return state;
  };

  it('opens once no document has been before ready for settleMs, at once when there is none; leaving twice counts once', async () => {
    const gate = new ReadyFirstGate(60_000, 100);
    await expect(gate.idle()).resolves.toBeUndefined();
    const leaveA = gate.enter();
    const leaveB = gate.enter();
    const waiting = tracked(gate.idle());
    leaveA();
    leaveA();
    expect(gate.pending()).toBe(1);
    await sleep(150);
    expect(waiting.done).toBe(false);
    leaveB();
    await sleep(30);
    expect(waiting.done).toBe(false);
    await sleep(150);
    expect(waiting.done).toBe(true);
    expect(gate.pending()).toBe(0);
  });

  it('stays shut when the next document arrives within settleMs of the last one becoming ready', async () => {
    const gate = new ReadyFirstGate(60_000, 100);
    const leaveA = gate.enter();
    const waiting = tracked(gate.idle());
    leaveA();
    await sleep(40);
    const leaveB = gate.enter(); // the consumer's next message
    await sleep(150);
    expect(waiting.done).toBe(false);
    leaveB();
    await sleep(150);
    expect(waiting.done).toBe(true);
  });

  it('lets a waiter go after maxWaitMs while documents keep coming', async () => {
    const gate = new ReadyFirstGate(100);
    gate.enter();
    const started = Date.now();
    await gate.idle();
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(gate.pending()).toBe(1);
  });
});
