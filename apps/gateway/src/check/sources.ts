import { checkV1 } from '@kb/proto';

/**
 * A source as the API shows it everywhere (verify `sources`, sub-requirement `sources`;
 * decisions.md "Vocabulary" and "Chunks"): `node_id` is the chunk, fetchable at
 * `GET /api/v2/documents/{handbook_id}/chunks/{node_id}`; `section` its heading path or null.
 */
export function presentSource(s: checkV1.Source) {
  return {
    handbook_id: s.handbookId,
    node_id: s.nodeId,
    title: s.title,
    start_page: s.startPage ?? null,
    end_page: s.endPage ?? null,
    section: s.section ?? null,
  };
}
