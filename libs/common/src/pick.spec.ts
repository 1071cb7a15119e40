import { pickCamelFields, pickFields, pickSnakeFields } from './pick';

describe('field pickers (one field list per record, both directions)', () => {
  it('pickFields copies only the named fields and spells absent values one way', () => {
    const stored = { id: 'c1', orgId: 'org', startPage: null, chunkIndex: 0, text: '' };
    const wire = pickFields(stored, ['id', 'startPage', 'chunkIndex', 'text'], undefined);
    expect(wire).toEqual({ id: 'c1', startPage: undefined, chunkIndex: 0, text: '' });
    expect('orgId' in wire).toBe(false);
    expect(pickFields({ id: 'c1', startPage: undefined as number | undefined }, ['id', 'startPage'], null)).toEqual({ id: 'c1', startPage: null });
  });

  it('pickSnakeFields renames to snake_case in the order of the keys (the order clients see)', () => {
    const json = pickSnakeFields({ startPage: 4, nodeId: 'n', section: undefined as string | undefined }, ['nodeId', 'section', 'startPage'], null);
    expect(JSON.stringify(json)).toBe('{"node_id":"n","section":null,"start_page":4}');
  });

  it('pickCamelFields renames snake_case back to camelCase', () => {
    expect(pickCamelFields({ handbook_id: 'h', end_page: null }, ['handbook_id', 'end_page'], undefined)).toEqual({ handbookId: 'h', endPage: undefined });
  });
});
