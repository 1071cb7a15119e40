// tools/eval/controls.ts `--mapping stated`: which requirements a company's policies say they implement, read from
// the policies themselves (the shared corpus' Datica HIPAA policies and the HIPAA requirement list), through the
// ingestion's real extractor and chunker.
import path from 'node:path';
import { documentsAt, documentTexts, loadFramework, statedMapping } from '../../tools/eval/controls';

const CORPUS = path.resolve(__dirname, '../../../shared/corpus');
const HIPAA = path.join(CORPUS, 'json/jupiterone_standard_hipaa.json');
const POLICIES = ['04-risk_management', '07-systems_access', '08-auditing', '11-incident_response', '13-disaster_recovery'].map((n) =>
  path.join(CORPUS, `markdown/datica_${n}_policy.md`),
);

describe('eval:controls --mapping stated', () => {
  it('maps each HIPAA requirement to the policies that name its reference, and only to those', async () => {
    const requirements = loadFramework(HIPAA);
    const library = POLICIES.flatMap(documentsAt);
    const mapped = new Map(statedMapping(requirements, await documentTexts(library)).map((r) => [r.ref, r.mapped]));
    // "7.1.2 Applicable Standards from the HIPAA Security Rule" of the systems access policy lists Automatic Logoff.
    expect(mapped.get('164.312(a)(2)(iii)')).toEqual(['datica_07-systems_access_policy']);
    // Named by two policies.
    expect(mapped.get('164.308(a)(8)')).toEqual(['datica_04-risk_management_policy', 'datica_08-auditing_policy']);
    // The framework's own mapping names another library's procedures: it is replaced, not merged.
    expect(requirements.find((r) => r.ref === '164.312(a)(2)(iii)')!.mapped.some((m) => m.startsWith('cp-'))).toBe(true);
    // The risk management policy names 164.308(a)(1)(ii)(A) and (B), which do not name their parent 164.308(a)(1)(ii).
    expect(mapped.get('164.308(a)(1)(ii)(A)')).toEqual(['datica_04-risk_management_policy']);
    expect([...mapped.values()].filter((m) => m.length > 0)).toHaveLength(20);
  });

  it('reads a reference as a whole, not as the start or the end of a longer one', () => {
    const r = (ref: string) => ({ id: ref, framework: 'f', ref, title: null, section: null, text: 'x', mapped: [] });
    const texts = new Map([
      ['a', 'Standards: 164.308(a)(1)(ii)(D) Information System Activity Review; 12.10.1.'],
      ['b', 'See 164.308(a)(1)(i).'],
    ]);
    const out = statedMapping([r('164.308(a)(1)(ii)'), r('164.308(a)(1)(ii)(D)'), r('164.308(a)(1)(i)'), r('2.10.1'), r('12.10.1')], texts);
    expect(out.map((x) => x.mapped)).toEqual([[], ['a'], ['b'], [], ['a']]);
  });
});
