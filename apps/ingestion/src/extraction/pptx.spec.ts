import JSZip from 'jszip';
import { writeFileSync } from 'node:fs';
import { extractDocument, ExtractionError } from './index';
import { useTempDir } from './testing/temp-dir';

// The corpus has no PPTX file, so these tests build a small one with the package parts that
// PowerPoint writes (presentation, relationships, slides, a notes slide, core properties).
const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';
const NS =
  'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';

function shape(ph: string | null, paragraphs: string[], bullets = false): string {
  const phXml = ph ? `<p:ph type="${ph}"/>` : '';
  const ps = paragraphs
    .map((t) => `<a:p>${bullets ? '<a:pPr><a:buChar char="•"/></a:pPr>' : ''}<a:r><a:rPr lang="en-US"/><a:t>${t}</a:t></a:r></a:p>`)
    .join('');
  return `<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/><p:nvPr>${phXml}</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/>${ps}</p:txBody></p:sp>`;
}

function table(rows: string[][]): string {
  const trs = rows
    .map((r) => `<a:tr h="1">${r.map((c) => `<a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>${c}</a:t></a:r></a:p></a:txBody></a:tc>`).join('')}</a:tr>`)
    .join('');
  return `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="t"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl>${trs}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
}

function slide(content: string): string {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld ${NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>${content}</p:spTree></p:cSld></p:sld>`;
}

async function buildPptx(file: string): Promise<void> {
  const zip = new JSZip();
  const rel = (id: string, type: string, target: string) =>
    `<Relationship Id="${id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/${type}" Target="${target}"/>`;
  zip.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>');
  zip.file(
    'docProps/core.xml',
    '<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Heat Safety Briefing</dc:title></cp:coreProperties>',
  );
  // Presentation order is slide2.xml first, then slide1.xml: the order must come from sldIdLst.
  zip.file(
    'ppt/presentation.xml',
    `<?xml version="1.0"?><p:presentation ${NS}><p:sldIdLst><p:sldId id="256" r:id="rId3"/><p:sldId id="257" r:id="rId2"/></p:sldIdLst></p:presentation>`,
  );
  zip.file(
    'ppt/_rels/presentation.xml.rels',
    `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rel('rId2', 'slide', 'slides/slide1.xml')}${rel('rId3', 'slide', 'slides/slide2.xml')}</Relationships>`,
  );
  zip.file(
    'ppt/slides/slide2.xml',
    slide(shape('ctrTitle', ['Heat Illness Prevention']) + shape('subTitle', ['Water. Rest. Shade.']) + shape('sldNum', ['1'])),
  );
  zip.file(
    'ppt/slides/slide1.xml',
    slide(
      shape('title', ['Risk levels']) +
        shape('body', ['Drink water every 15 minutes', 'Rest in the shade'], true) +
        table([
          ['Heat index', 'Risk level'],
          ['Less than 91°F', 'Lower (Caution)'],
          ['91°F to 103°F', 'Moderate'],
        ]),
    ),
  );
  zip.file(
    'ppt/slides/_rels/slide1.xml.rels',
    `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rel('rId1', 'notesSlide', '../notesSlides/notesSlide1.xml')}</Relationships>`,
  );
  zip.file(
    'ppt/notesSlides/notesSlide1.xml',
    `<?xml version="1.0"?><p:notes ${NS}><p:cSld><p:spTree>${shape('body', ['Mention the OSHA heat app.'])}</p:spTree></p:cSld></p:notes>`,
  );
  writeFileSync(file, await zip.generateAsync({ type: 'nodebuffer' }));
}

describe('PPTX extraction (JSZip + slide XML)', () => {
  const tmp = useTempDir('kb-pptx-spec-');

  it('gives one page per slide in presentation order: title heading, bullets, tables, speaker notes', async () => {
    const file = tmp('briefing.pptx');
    await buildPptx(file);
    const doc = await extractDocument(file, PPTX);
    expect(doc.pageCount).toBe(2);
    expect(doc.title).toBe('Heat Safety Briefing');
    expect(doc.blocks).toEqual([
      { kind: 'heading', text: 'Heat Illness Prevention', page: 1, level: 1 },
      { kind: 'paragraph', text: 'Water. Rest. Shade.', page: 1 },
      { kind: 'heading', text: 'Risk levels', page: 2, level: 1 },
      { kind: 'list', text: 'Drink water every 15 minutes', page: 2 },
      { kind: 'list', text: 'Rest in the shade', page: 2 },
      {
        kind: 'table',
        text: 'Heat index | Risk level\nLess than 91°F | Lower (Caution)\n91°F to 103°F | Moderate',
        page: 2,
        tableHeader: 'Heat index | Risk level',
      },
      { kind: 'paragraph', text: 'Speaker notes: Mention the OSHA heat app.', page: 2 },
    ]);
  });

  it('rejects a ZIP without a presentation as CORRUPT_FILE and enforces maxPages on slides', async () => {
    const zip = new JSZip();
    zip.file('hello.txt', 'not a presentation');
    const file = tmp('not-a-deck.pptx');
    writeFileSync(file, await zip.generateAsync({ type: 'nodebuffer' }));
    expect(((await extractDocument(file, PPTX).catch((e: unknown) => e)) as ExtractionError).code).toBe('CORRUPT_FILE');

    const deck = tmp('deck.pptx');
    await buildPptx(deck);
    expect(((await extractDocument(deck, PPTX, { maxPages: 1 }).catch((e: unknown) => e)) as ExtractionError).code).toBe('TOO_LARGE');
  });
});
