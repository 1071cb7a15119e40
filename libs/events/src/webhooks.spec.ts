import { WEBHOOK_EVENT_TYPES, WEBHOOK_FANOUT_PARTITIONS, webhookEventSubject, webhookPartition } from './webhooks';

describe('webhook event subjects', () => {
  it('puts every event of one resource on one partition, and spreads resources over all of them', () => {
    const key = 'document:9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d';
    const subjects = WEBHOOK_EVENT_TYPES.map((t) => webhookEventSubject(t, key));
    const partition = webhookPartition(key);
    expect(subjects.every((s, i) => s === `webhooks.events.${partition}.${WEBHOOK_EVENT_TYPES[i]}`)).toBe(true);
    const seen = new Set(Array.from({ length: 400 }, (_, i) => webhookPartition(`batch:${i}`)));
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: WEBHOOK_FANOUT_PARTITIONS }, (_, i) => i));
  });

  it('is stable across versions (FNV-1a 32-bit): a resource must not change partition while events are queued', () => {
    // FNV-1a("a") = 0xe40c292c, FNV-1a("foobar") = 0xbf9cf968 (reference values of the FNV spec).
    expect(webhookPartition('a')).toBe(0xe40c292c % WEBHOOK_FANOUT_PARTITIONS);
    expect(webhookPartition('foobar')).toBe(0xbf9cf968 % WEBHOOK_FANOUT_PARTITIONS);
  });
});
