import { joinLines, numberedHeadingLevel, pageTextToBlocks, stripRunningLines } from './layout';

describe('layout heuristics for page text', () => {
  it('joins wrapped lines and words hyphenated at a line end', () => {
    expect(joinLines(['inspection as soon as practica-', 'ble after the notice', 'is given.'])).toBe(
      'inspection as soon as practicable after the notice is given.',
    );
    expect(joinLines(['the Debian-', 'Specific files'])).toBe('the Debian-Specific files');
    expect(joinLines(['1.1 Scope . . . . . . . . 3'])).toBe('1.1 Scope \u2026 3');
  });

  it('recognises numbered and named section titles but not sentences, footnotes or TOC lines', () => {
    expect(numberedHeadingLevel('4.2 Package relationships')).toBe(2);
    expect(numberedHeadingLevel('3.2. SAR File Concepts')).toBe(2);
    expect(numberedHeadingLevel('5.6.31.3 Provided keywords')).toBe(4);
    expect(numberedHeadingLevel('SEC. 4. APPLICABILITY OF THIS ACT')).toBe(1);
    expect(numberedHeadingLevel('5.4 Debian source control files – .dsc')).toBe(2);
    expect(numberedHeadingLevel('1 Rationale:')).toBeNull();
    expect(numberedHeadingLevel('29 USC 652')).toBeNull();
    expect(numberedHeadingLevel('5.6.1 The requirements for source package names are now explicitly spelled out.')).toBeNull();
    expect(numberedHeadingLevel('1.1 Scope . . . . . . . . . . 3')).toBeNull();
    expect(numberedHeadingLevel('2 The reason for this is that dependencies change, and you should list all those packages')).toBeNull();
  });

  it('splits a page into headings, paragraphs and list items', () => {
    const page = [
      '4.2 Package relationships',
      'Source packages should specify which binary packages they require to be installed or not to be installed in order to build',
      'correctly. For example, if building a package requires a certain compiler.',
      'Declaring relationships between packages explains the technical details.',
      '',
      '• This allows maintaining the list separately from the policy documents (the list does not need the kind of',
      'control that the policy documents do).',
      '• Having a separate package allows one to install the build-essential packages.',
    ].join('\n');
    expect(pageTextToBlocks(page, 30)).toEqual([
      { kind: 'heading', text: '4.2 Package relationships', page: 30, level: 2 },
      {
        kind: 'paragraph',
        text: 'Source packages should specify which binary packages they require to be installed or not to be installed in order to build correctly. For example, if building a package requires a certain compiler.',
        page: 30,
      },
      { kind: 'paragraph', text: 'Declaring relationships between packages explains the technical details.', page: 30 },
      {
        kind: 'list',
        text: '• This allows maintaining the list separately from the policy documents (the list does not need the kind of control that the policy documents do).',
        page: 30,
      },
      { kind: 'list', text: '• Having a separate package allows one to install the build-essential packages.', page: 30 },
    ]);
  });

  it('removes running headers, page numbers and section-title footers', () => {
    const titles = ['Scope', 'Archive areas', 'Binary packages', 'Source packages'];
    const pages = titles.map((title, i) =>
      [
        'Debian Policy Manual, Release 4.6.2.0',
        '',
        `${i + 1}.1 ${title}`,
        `The ${title.toLowerCase()} section says something useful.`,
        '',
        `${i + 1}.1. ${title}`,
        '',
        String(i + 20),
      ].join('\n'),
    );
    const stripped = stripRunningLines(pages);
    expect(stripped[0]).toBe(['', '1.1 Scope', 'The scope section says something useful.', '', ''].join('\n'));
    expect(stripped.every((p) => !p.includes('Release 4.6.2.0'))).toBe(true);
  });
});
