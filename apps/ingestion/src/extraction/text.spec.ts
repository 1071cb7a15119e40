import { readFileSync, writeFileSync } from 'node:fs';
import { extractDocument, ExtractionError } from './index';
import { corpus } from './testing/corpus';
import { textToBlocks, textToBlocksYielding } from './text';
import { useTempDir } from './testing/temp-dir';

describe('plain text extraction', () => {
  const tmp = useTempDir('kb-text-spec-');

  it('reads the Debian Policy text edition: underlined section titles become headings, wrapped lines are joined', async () => {
    const doc = await extractDocument(corpus('txt/debian-policy-4.6.2.0.txt'), 'text/plain; charset=utf-8');
    expect(doc.pageCount).toBeNull();
    expect(doc.title).toBe('Debian Policy Manual');
    const headings = doc.blocks.filter((b) => b.kind === 'heading');
    const chapter = headings.find((h) => h.text === '4. Source packages')!;
    const section = headings.find((h) => h.text === '4.2. Package relationships')!;
    const sub = headings.find((h) => h.text === '1.3.1. Early history')!;
    expect(chapter.level!).toBeLessThan(section.level!);
    expect(section.level!).toBeLessThan(sub.level!);
    const i = doc.blocks.indexOf(section);
    expect(doc.blocks[i + 1].text).toMatch(
      /^Source packages should specify which binary packages they require to be installed or not to be installed in order to build correctly\./,
    );
    expect(doc.blocks.every((b) => b.page === null)).toBe(true);
  });

  it('treats form feeds as page breaks', async () => {
    const policy = readFileSync(corpus('txt/LICENSE_debian-policy_copyright.txt'), 'utf8');
    const file = tmp('paged.txt');
    writeFileSync(file, `First page paragraph.\n\nSecond paragraph.\f${policy}\fThird page.\n`);
    const doc = await extractDocument(file, 'text/plain');
    expect(doc.pageCount).toBe(3);
    expect(doc.blocks[0]).toEqual({ kind: 'paragraph', text: 'First page paragraph.', page: 1 });
    expect(doc.blocks[doc.blocks.length - 1]).toEqual({ kind: 'paragraph', text: 'Third page.', page: 3 });
    expect(doc.blocks.filter((b) => b.page === 2).length).toBeGreaterThan(3);
  });

  it('decodes Windows-1252 text and rejects binary data and empty files', async () => {
    const latin = tmp('latin1.txt');
    writeFileSync(latin, Buffer.from('Caf\xe9 r\xe9sum\xe9 \x93quoted\x94', 'latin1'));
    expect((await extractDocument(latin, 'text/plain')).blocks[0].text).toBe('Caf\u00e9 r\u00e9sum\u00e9 \u201cquoted\u201d');

    const binary = tmp('binary.txt');
    writeFileSync(binary, Buffer.from([0x00, 0x01, 0x02, 0x00, 0x41]));
    expect(((await extractDocument(binary, 'text/plain').catch((e: unknown) => e)) as ExtractionError).code).toBe('CORRUPT_FILE');

    const empty = tmp('empty.txt');
    writeFileSync(empty, '\n  \n');
    expect(((await extractDocument(empty, 'text/plain').catch((e: unknown) => e)) as ExtractionError).code).toBe('NO_TEXT');
  });

  it('splits a long text a slice at a time into exactly the blocks of one pass', async () => {
    const text = readFileSync(corpus('txt/debian-policy-4.6.2.0.txt'), 'utf8').replace(/\r\n?/g, '\n');
    const whole = textToBlocks(text, null, new Map());
    const sliced: ReturnType<typeof textToBlocks> = [];
    // 4 KiB slices: about 120 cuts, each at a blank line.
    await textToBlocksYielding(text, null, new Map(), sliced, 4096);
    expect(sliced).toEqual(whole);
  });

  it('reads a text file of over 100,000 paragraphs (a single push of them overflowed the call stack)', async () => {
    const file = tmp('many.txt');
    writeFileSync(file, Array.from({ length: 150_000 }, (_, i) => `Paragraph ${i} of a long log.`).join('\n\n'));
    const doc = await extractDocument(file, 'text/plain');
    expect(doc.blocks).toHaveLength(150_000);
    expect(doc.blocks[149_999].text).toBe('Paragraph 149999 of a long log.');
  });
});
