import { jsonShapeProblem, MAX_BODY_MEMBERS, MAX_JSON_DEPTH, MAX_OBJECT_KEYS, metadataProblem } from './body-shape';

const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

describe('jsonShapeProblem (linear pre-parse shape limits)', () => {
  it('accepts ordinary bodies, including keys and strings holding braces, colons, commas and escaped quotes', () => {
    const body = { name: 'a "quoted" {x: [1, 2]} \\', requirements: [{ text: 'x', metadata: { 'k:{': ['a,b', { c: 1 }] } }], ...wide(MAX_OBJECT_KEYS - 2) };
    expect(jsonShapeProblem(JSON.stringify(body))).toBeNull();
  });

  it('names the path of an object over the key limit', () => {
    const body = { requirements: [{ text: 'x' }, { text: 'y', metadata: wide(MAX_OBJECT_KEYS + 1) }] };
    expect(jsonShapeProblem(JSON.stringify(body))).toBe(
      `The object at requirements[1].metadata has more than ${MAX_OBJECT_KEYS} keys: an object in a request body may have at most ${MAX_OBJECT_KEYS}.`,
    );
    expect(jsonShapeProblem(JSON.stringify({ name: 'x', ...wide(MAX_OBJECT_KEYS) }))).toMatch(/^The request body has more than 100 keys/);
  });

  it('refuses nesting past the depth limit and more members than the body limit', () => {
    expect(jsonShapeProblem('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1))).toMatch(/nested deeper than 32/);
    expect(jsonShapeProblem('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBeNull();
    expect(jsonShapeProblem(JSON.stringify({ a: Array.from({ length: MAX_BODY_MEMBERS }, () => 0) }))).toMatch(/more than 100,000 keys and array items/);
    expect(jsonShapeProblem(JSON.stringify({ a: Array.from({ length: MAX_BODY_MEMBERS - 1 }, () => 0) }))).toBeNull();
  });

  it('refuses a 200,000-key body in a few milliseconds (it stops at the first object over the limit)', () => {
    const text = JSON.stringify({ name: 'x', ...wide(200_000) });
    const started = performance.now();
    expect(jsonShapeProblem(text)).not.toBeNull();
    expect(performance.now() - started).toBeLessThan(20);
  });
});

describe('metadataProblem', () => {
  it('accepts what requirement metadata holds in practice and refuses over-size objects', () => {
    expect(metadataProblem({ clause: '4.2.1', ref: 'ISO 45001 4.2.1', source_row: 7, tags: ['ppe', 'site'] })).toBeNull();
    expect(metadataProblem(wide(65))).toMatch(/at most 64 keys and array items/);
    expect(metadataProblem({ a: { b: { c: { d: { e: 1 } } } } })).toBeNull();
    expect(metadataProblem({ a: { b: { c: { d: { e: {} } } } } })).toMatch(/nested at most 5 levels/);
    expect(metadataProblem({ note: 'x'.repeat(16_384) })).toMatch(/at most 16384 bytes/);
  });
});
