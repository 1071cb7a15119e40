import { ReadyFirstGate } from './ready-first';

describe('ReadyFirstGate', () => {
  const settled = async (p: Promise<void>) => {
    let done = false;
    void p.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    return done;
  };

  it('opens when the last document before ready leaves, at once when there is none; leaving twice counts once', async () => {
    const gate = new ReadyFirstGate();
    expect(await settled(gate.idle())).toBe(true);
    const leaveA = gate.enter();
    const leaveB = gate.enter();
    const waiting = gate.idle();
    leaveA();
    leaveA();
    expect(gate.pending()).toBe(1);
    expect(await settled(waiting)).toBe(false);
    leaveB();
    expect(await settled(waiting)).toBe(true);
    expect(gate.pending()).toBe(0);
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
