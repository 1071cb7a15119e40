// Paging of the API's lists (service-api.md "Conventions": `limit` 1–200, default 50, and `offset`;
// each page carries `pagination: { limit, offset, total }`). One pattern for every list of the SDK:
// a {@link PagedList}, an async iterable over every item that fetches a page at a time.

/** A page of a list: its items and `pagination` (`limit`, `offset`, `total`) as the service sends them. */
export interface Page<T> {
  data: T[];
  pagination: { limit: number; offset: number; total: number };
}

/** Paging of a list call: `limit` 1–200 (default 50), `offset` ≥ 0 (default 0). */
export interface PageOptions {
  limit?: number;
  offset?: number;
  signal?: AbortSignal;
}

/** Fetches the page of `limit` items (undefined: the service's default, 50) starting at `offset`. */
export type PageFetcher<T> = (offset: number, limit: number | undefined, signal: AbortSignal | undefined) => Promise<Page<T>>;

/**
 * A list of the API, fetched as it is read. Iterating it (`for await (const p of kb.projects.list())`)
 * yields every item from `offset` on, one request per page of `limit` items (the service's default
 * page, 50, when not given; 200 at most), until the list's `total` is reached or a page comes back
 * empty. `firstPage()` is the one page at `offset` (what the list functions returned before), and
 * `pages()` iterates page by page.
 *
 * The API pages by offset. Items added to the top of a newest-first list while it is iterated
 * push the others down: an item already yielded is not yielded again (items with an `id` are
 * de-duplicated by it); an item deleted meanwhile may make the next one be skipped.
 *
 * Every request can throw what the list's call throws (a {@link KbApiError}, e.g. 400 for a bad
 * filter); nothing is sent before the iteration (or `firstPage()`) starts.
 */
export class PagedList<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: PageFetcher<T>,
    private readonly options: PageOptions = {},
  ) {}

  /** The page at `offset` (default 0) of `limit` items (default 50), with its `pagination`. */
  firstPage(): Promise<Page<T>> {
    return this.fetchPage(this.options.offset ?? 0, this.options.limit, this.options.signal);
  }

  /** Every page from `offset` on, each fetched when the previous one has been consumed. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    for (let offset = this.options.offset ?? 0; ;) {
      const page = await this.fetchPage(offset, this.options.limit, this.options.signal);
      yield page;
      offset += page.data.length;
      if (page.data.length === 0 || offset >= page.pagination.total) return;
    }
  }

  /** Every item from `offset` on, across pages (see the class). */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    const seen = new Set<string>();
    for await (const page of this.pages()) {
      for (const item of page.data) {
        const id = (item as { id?: unknown } | null)?.id;
        if (typeof id === 'string') {
          if (seen.has(id)) continue;
          seen.add(id);
        }
        yield item;
      }
    }
  }

  /** Every item from `offset` on, in one array (all pages read first: mind the size of the list). */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
