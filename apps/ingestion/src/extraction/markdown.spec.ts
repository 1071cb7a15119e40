import { extractDocument } from './index';
import { markdownToBlocks } from './markdown';
import { corpus } from './testing/corpus';

describe('Markdown extraction (marked lexer)', () => {
  it('turns a policy into headings with levels and numbered/bulleted list items', async () => {
    const doc = await extractDocument(corpus('markdown/datica_04-risk_management_policy.md'), 'text/markdown');
    expect(doc.title).toBe('4. Risk Management Policy');
    expect(doc.pageCount).toBeNull();
    const headings = doc.blocks.filter((b) => b.kind === 'heading').map((b) => [b.level, b.text]);
    expect(headings.slice(0, 4)).toEqual([
      [1, '4. Risk Management Policy'],
      [2, '4.1 Applicable Standards'],
      [3, '4.1.1 Applicable Standards from the HITRUST Common Security Framework'],
      [3, '4.1.2 Applicable Standards from the HIPAA Security Rule'],
    ]);
    expect(doc.blocks).toContainEqual({ kind: 'list', text: '03.a - Risk Management Program Development', page: null });
    expect(doc.blocks).toContainEqual({ kind: 'list', text: '1. Risk assessments are done throughout product life cycles;', page: null });
    const first = doc.blocks.find((b) => b.text.startsWith('1. It is the policy of Datica'));
    expect(first?.kind).toBe('list');
  });

  it('keeps template placeholders as text', async () => {
    const doc = await extractDocument(corpus('markdown/jupiterone_policy_access.md'), 'text/markdown');
    expect(doc.blocks[0]).toEqual({ kind: 'heading', text: 'Access', page: null, level: 1 });
    expect(doc.blocks.some((b) => b.text.startsWith('Access to {{companyShortName}} systems and application is limited for all users'))).toBe(true);
  });

  it('reads pipe tables, fenced code, inline markup and front matter', () => {
    const md = [
      '---',
      'title: ignored',
      '---',
      '# Controls',
      '',
      'Use **strong** _passwords_ and `mfa` as described in [the policy](http://x) &amp; elsewhere.',
      '',
      '| ID | Control |',
      '|----|---------|',
      '| AC-1 | Access \\| policy |',
      '| AC-2 | Account management |',
      '',
      '```sh',
      'passwd --expire user',
      '```',
      '',
      '<div>Note: <b>keep</b> this<script>alert(1)</script><!-- hidden --></div>',
    ].join('\n');
    expect(markdownToBlocks(md)).toEqual([
      { kind: 'heading', text: 'Controls', page: null, level: 1 },
      { kind: 'paragraph', text: 'Use strong passwords and mfa as described in the policy & elsewhere.', page: null },
      { kind: 'table', text: 'ID | Control\nAC-1 | Access | policy\nAC-2 | Account management', page: null, tableHeader: 'ID | Control' },
      { kind: 'paragraph', text: 'passwd --expire user', page: null },
      { kind: 'paragraph', text: 'Note: keep this', page: null },
    ]);
  });
});
