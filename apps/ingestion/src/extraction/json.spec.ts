import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractDocument, ExtractionError } from './index';
import { corpus } from './testing/corpus';

describe('JSON extraction', () => {
  it('flattens the HIPAA control list: one paragraph per requirement, section titles as headings', async () => {
    const doc = await extractDocument(corpus('json/jupiterone_standard_hipaa.json'), 'application/json');
    expect(doc.title).toBe('HIPAA');
    expect(doc.blocks[0]).toEqual({
      kind: 'paragraph',
      text: 'standard: HIPAA\nversion: 2013\nwebLink: https://www.hhs.gov/hipaa/for-professionals/index.html',
      page: null,
    });
    expect(doc.blocks[1]).toEqual({ kind: 'heading', text: 'Administrative Safeguards', page: null, level: 1 });
    expect(doc.blocks).toContainEqual({
      kind: 'paragraph',
      text: [
        'sections[0].requirements[0].ref: 164.308(a)(1)(i)',
        'sections[0].requirements[0].title: Security management process',
        'sections[0].requirements[0].summary: Implement policies and procedures to prevent, detect, contain and correct security violations.',
        'sections[0].requirements[0].mappedControls: cp-policy-framework, cp-policy-mgmt',
      ].join('\n'),
      page: null,
    });
  });

  it('flattens the NIST CSF list with domain headings', async () => {
    const doc = await extractDocument(corpus('json/jupiterone_standard_nist-csf-v2.0.0.json'), 'application/json');
    expect(doc.blocks).toContainEqual({ kind: 'heading', text: '(GV.OC) Govern: Organzational Context', page: null, level: 1 });
    expect(
      doc.blocks.some((b) =>
        b.text.startsWith('domains[0].controls[0].ref: GV.OC-01\ndomains[0].controls[0].summary: The organizational mission is understood'),
      ),
    ).toBe(true);
  });

  it('reports invalid JSON as CORRUPT_FILE with the line of the error', async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'kb-json-spec-'));
    try {
      const file = path.join(tmp, 'bad.json');
      writeFileSync(file, '{\n  "a": 1,\n  "b": \n}');
      const error = (await extractDocument(file, 'application/json').catch((e: unknown) => e)) as ExtractionError;
      expect(error.code).toBe('CORRUPT_FILE');
      expect(error.message).toMatch(/^The JSON file is not valid JSON.*; fix the syntax and upload it again\.$/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
