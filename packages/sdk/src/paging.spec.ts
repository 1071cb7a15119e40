import { PagedList, type Page } from './paging';
import { ListWindow, pollIntervals, pollUntil } from './polling';
import { KbTimeoutError } from './errors';

/** A newest-first list held in memory, paged as the service pages (offset, limit default 50, total), counting its page requests. */
function memoryList(items: Array<{ id: string }>) {
  const requests: Array<{ offset: number; limit: number | undefined }> = [];
  const fetchPage = async (offset: number, limit: number | undefined): Promise<Page<{ id: string }>> => {
    requests.push({ offset, limit });
    const size = limit ?? 50;
    return { data: items.slice(offset, offset + size), pagination: { limit: size, offset, total: items.length } };
  };
  return { items, requests, fetchPage };
}

const ids = (n: number, prefix = 'p') => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}` }));

describe('PagedList', () => {
  it('iterates every item across pages, one request per page, and stops at the total', async () => {
    const list = memoryList(ids(7));
    const seen: string[] = [];
    for await (const item of new PagedList(list.fetchPage, { limit: 3 })) seen.push(item.id);
    expect(seen).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
    expect(list.requests).toEqual([
      { offset: 0, limit: 3 },
      { offset: 3, limit: 3 },
      { offset: 6, limit: 3 },
    ]);
  });

  it('firstPage is the one page at offset; pages() yields each page; toArray from offset on', async () => {
    const list = memoryList(ids(5));
    const paged = new PagedList(list.fetchPage, { limit: 2, offset: 1 });
    expect(await paged.firstPage()).toEqual({ data: [{ id: 'p1' }, { id: 'p2' }], pagination: { limit: 2, offset: 1, total: 5 } });
    const sizes: number[] = [];
    for await (const page of paged.pages()) sizes.push(page.data.length);
    expect(sizes).toEqual([2, 2]);
    expect((await paged.toArray()).map((p) => p.id)).toEqual(['p1', 'p2', 'p3', 'p4']);
    expect(await new PagedList(memoryList([]).fetchPage).toArray()).toEqual([]);
  });

  it('sends nothing until iterated, and stops after the first page when the caller breaks', async () => {
    const list = memoryList(ids(10));
    const paged = new PagedList(list.fetchPage, { limit: 4 });
    expect(list.requests).toEqual([]);
    for await (const item of paged) if (item.id === 'p1') break;
    expect(list.requests).toHaveLength(1);
  });

  it('does not yield an item twice when newer items push the list down between pages', async () => {
    const list = memoryList(ids(4));
    const seen: string[] = [];
    for await (const item of new PagedList(list.fetchPage, { limit: 2 })) {
      seen.push(item.id);
      // A new item at the top after the first page: p1 moves to offset 2, the start of the next page.
      if (item.id === 'p1') list.items.unshift({ id: 'new' });
    }
    expect(seen).toEqual(['p0', 'p1', 'p2', 'p3']);
  });

  it('stops on an empty page even when the total says more (items deleted meanwhile)', async () => {
    let calls = 0;
    const paged = new PagedList<{ id: string }>(
      async (offset) => (calls++, { data: offset === 0 ? [{ id: 'a' }] : [], pagination: { limit: 1, offset, total: 9 } }),
      { limit: 1 },
    );
    expect(await paged.toArray()).toEqual([{ id: 'a' }]);
    expect(calls).toBe(2);
  });
});

describe('pollIntervals', () => {
  it('starts at the first interval and doubles up to the cap (defaults 0.5 s and 10 s)', () => {
    const take = (it: Iterator<number>, n: number) => Array.from({ length: n }, () => it.next().value);
    expect(take(pollIntervals(), 8)).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
    expect(take(pollIntervals(300, 1000), 4)).toEqual([300, 600, 1000, 1000]);
    expect(() => pollIntervals(0).next()).toThrow(TypeError);
    expect(() => pollIntervals(2000, 1000).next()).toThrow(TypeError);
  });
});

describe('pollUntil', () => {
  it('reads until done, calls onChange only on a change, and times out with what it last read', async () => {
    const values = ['pending', 'pending', 'processing', 'completed'];
    const changes: string[] = [];
    let reads = 0;
    const last = await pollUntil(
      async () => values[reads++],
      (v) => v === 'completed',
      { pollIntervalMs: 1, maxPollIntervalMs: 2, fingerprint: (v) => v, onChange: (v) => changes.push(v), describe: (v) => v },
    );
    expect([last, reads, changes]).toEqual(['completed', 4, ['pending', 'processing', 'completed']]);
    const late = await pollUntil(
      async () => 'pending',
      () => false,
      { pollIntervalMs: 5, timeoutMs: 20, fingerprint: (v) => v, describe: (v) => `run still ${v}` },
    ).catch((e) => e);
    expect(late).toBeInstanceOf(KbTimeoutError);
    expect(late.message).toMatch(/^run still pending after 20 ms/);
  });
});

describe('ListWindow', () => {
  it('finds an item among the 50 newest, then reads 20 from where it was; follows it as newer items push it down', async () => {
    const list = memoryList([...ids(3, 'new'), { id: 'run' }, ...ids(100, 'old')]);
    const window = new ListWindow(list.fetchPage);
    expect(await window.find('run')).toEqual({ id: 'run' });
    expect(list.requests).toEqual([{ offset: 0, limit: 50 }]);
    list.items.unshift(...ids(5, 'newer'));
    expect(await window.find('run')).toEqual({ id: 'run' });
    expect(list.requests[1]).toEqual({ offset: 3, limit: 20 });
    expect(await window.find('run')).toEqual({ id: 'run' });
    expect(list.requests[2]).toEqual({ offset: 8, limit: 20 });
    // 25 newer items between two polls: out of the window, found again among the newest 50.
    list.items.unshift(...ids(25, 'burst'));
    expect(await window.find('run')).toEqual({ id: 'run' });
    expect(list.requests.slice(3)).toEqual([
      { offset: 8, limit: 20 },
      { offset: 0, limit: 50 },
    ]);
  });

  it('gives up on an item that is not among the 50 newest: undefined from then on, without a request', async () => {
    const list = memoryList([...ids(60, 'new'), { id: 'old-run' }]);
    const window = new ListWindow(list.fetchPage);
    expect(await window.find('old-run')).toBeUndefined();
    expect(await window.find('old-run')).toBeUndefined();
    expect(list.requests).toEqual([{ offset: 0, limit: 50 }]);
  });
});
