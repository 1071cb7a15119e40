import { pickSnakeFields } from '@kb/common';
import { checkV1 } from '@kb/proto';

/**
 * A source as the API shows it everywhere (verify `sources`, sub-requirement `sources`;
 * decisions.md "Vocabulary" and "Chunks"): `node_id` is the chunk, fetchable at
 * `GET /api/v2/documents/{handbook_id}/chunks/{node_id}`; `section` its heading path or null.
 */
export function presentSource(s: checkV1.Source) {
  return pickSnakeFields(s, ['handbookId', 'nodeId', 'title', 'startPage', 'endPage', 'section'], null);
}
